#!/usr/bin/env python3
"""Hostile clients against a running uaserver, with the server's RSS before,
during and after each attack (from /proc/PID/statm). Used by
benchmarks/attack_rss.sh; docs/Benchmarks.md ("Memory under attack").

Attacks (policy None, opc.tcp by hand, standard library only):
  never-read  N connections flood GetEndpoints and never read the answers
  connect     N connections from one address, held open, then closed
  chunks      N connections each send all chunks but the last of a message
              just under max_message_size, and hold it open

Usage: attack_rss.py --pid PID --port PORT ATTACK [--conns N] [--hold S]
                     [--settle S] [--message-size BYTES]
Prints one line: attack before_kib peak_kib during_kib after_kib detail
"""
import argparse
import os
import socket
import struct
import sys
import threading
import time

POLICY_NONE = b"http://opcfoundation.org/UA/SecurityPolicy#None"


def rss_kib(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def ua_string(b):
    return struct.pack("<i", -1) if b is None else struct.pack("<i", len(b)) + b


def request_header():
    # null auth token, timestamp, handle, diagnostics, audit id, timeout hint,
    # empty additional header
    return (b"\x00\x00" + struct.pack("<qII", 0, 1, 0) + ua_string(None) +
            struct.pack("<I", 0) + b"\x00\x00\x00")


def four_byte_id(n):
    return b"\x01\x00" + struct.pack("<H", n)


def recv_chunk(s):
    head = b""
    while len(head) < 8:
        part = s.recv(8 - len(head))
        if not part:
            raise ConnectionError("closed")
        head += part
    size = struct.unpack("<I", head[4:8])[0]
    body = b""
    while len(body) < size - 8:
        part = s.recv(size - 8 - len(body))
        if not part:
            raise ConnectionError("closed")
        body += part
    return head + body


class Channel:
    """A None secure channel on a blocking socket."""

    def __init__(self, port, url):
        self.s = socket.create_connection(("127.0.0.1", port))
        hel = struct.pack("<IIIII", 0, 65536, 65536, 0, 0) + ua_string(url.encode())
        self.s.sendall(b"HELF" + struct.pack("<I", 8 + len(hel)) + hel)
        ack = recv_chunk(self.s)
        if ack[:4] != b"ACKF":
            raise ConnectionError(ack[:4])
        self.recv_buffer = struct.unpack("<I", ack[12:16])[0]
        self.max_message = struct.unpack("<I", ack[20:24])[0]
        body = (four_byte_id(446) + request_header() +
                struct.pack("<III", 0, 0, 1) + ua_string(b"") + struct.pack("<I", 3600000))
        asym = ua_string(POLICY_NONE) + ua_string(None) + ua_string(None)
        msg = struct.pack("<I", 0) + asym + struct.pack("<II", 1, 1) + body
        self.s.sendall(b"OPNF" + struct.pack("<I", 8 + len(msg)) + msg)
        opn = recv_chunk(self.s)
        if opn[:4] != b"OPNF":
            raise ConnectionError(opn[:4])
        self.channel_id = struct.unpack("<I", opn[8:12])[0]
        p = 12
        for _ in range(3):  # policy uri, certificate, thumbprint
            n = struct.unpack("<i", opn[p:p + 4])[0]
            p += 4 + max(n, 0)
        p += 8  # sequence number, request id
        p += 4  # type id
        p += 8 + 4 + 4 + 1 + 4 + 3  # response header (no diagnostics, no strings)
        p += 4  # protocol version
        self.token_id = struct.unpack("<I", opn[p + 4:p + 8])[0]
        self.seq = 2
        self.request_id = 2

    def msg_chunk(self, chunk_type, request_id, body):
        head = struct.pack("<IIII", self.channel_id, self.token_id, self.seq, request_id)
        self.seq += 1
        return b"MSG" + chunk_type + struct.pack("<I", 8 + len(head) + len(body)) + head + body

    def get_endpoints(self, url):
        body = (four_byte_id(428) + request_header() + ua_string(url.encode()) +
                struct.pack("<ii", -1, -1))
        self.request_id += 1
        return self.msg_chunk(b"F", self.request_id, body)


def wait_rss(pid, seconds):
    time.sleep(seconds)
    return rss_kib(pid)


def sample_peak(pid, stop, out):
    peak = 0
    while not stop.is_set():
        try:
            peak = max(peak, rss_kib(pid))
        except OSError:
            break
        time.sleep(0.05)
    out.append(peak)


def flood_one(c, url, deadline, sent):
    """Sends GetEndpoints until the server stops taking them (a send that
    waits 1 s) or the deadline; the answers are never read."""
    c.s.settimeout(1.0)
    while time.time() < deadline:
        batch = b"".join(c.get_endpoints(url) for _ in range(200))
        try:
            c.s.sendall(batch)
            sent.append(len(batch))
        except OSError:
            return


def attack_never_read(a, url):
    chans = [Channel(a.port, url) for _ in range(a.conns)]
    deadline = time.time() + a.hold
    sent, threads = [], []
    for c in chans:
        t = threading.Thread(target=flood_one, args=(c, url, deadline, sent))
        t.start()
        threads.append(t)
    time.sleep(max(0.0, deadline - time.time() - 0.5))
    during = rss_kib(a.pid)
    for t in threads:
        t.join()
    return chans, during, f"{sum(sent) // (1 << 20)} MiB of requests"


def attack_connect(a, url):
    socks, refused = [], 0
    for _ in range(a.conns):
        try:
            s = socket.create_connection(("127.0.0.1", a.port))
            socks.append(s)
        except OSError:
            refused += 1
    time.sleep(0.5)
    errs = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(8)[:3] == b"ERR":
                errs += 1
        except OSError:
            pass
    during = rss_kib(a.pid)
    time.sleep(a.hold)
    return socks, during, f"{len(socks)} connected, {errs} refused with ERR"


def attack_chunks(a, url):
    chans, held, refused = [], 0, 0
    for _ in range(a.conns):
        try:
            c = Channel(a.port, url)
        except OSError:
            refused += 1
            continue
        chans.append(c)
        body_max = c.recv_buffer - 24
        total = min(a.message_size, c.max_message or a.message_size) - body_max
        body = bytes(body_max)
        sent = 0
        try:
            while sent + body_max <= total:
                c.s.sendall(c.msg_chunk(b"C", 7, body))
                sent += body_max
            held += sent
        except OSError:
            refused += 1
    during = rss_kib(a.pid)
    time.sleep(a.hold)
    return chans, during, f"{held // (1 << 20)} MiB held open, {refused} refused"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("attack", choices=["never-read", "connect", "chunks"])
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--conns", type=int, default=50)
    p.add_argument("--hold", type=float, default=3.0)
    p.add_argument("--settle", type=float, default=8.0)
    p.add_argument("--message-size", type=int, default=16 << 20)
    a = p.parse_args()
    url = f"opc.tcp://127.0.0.1:{a.port}"
    # a warm-up client: the baseline is a server that has served once
    Channel(a.port, url).s.close()
    time.sleep(1.0)
    before = rss_kib(a.pid)
    stop, peak = threading.Event(), []
    t = threading.Thread(target=sample_peak, args=(a.pid, stop, peak))
    t.start()
    fn = {"never-read": attack_never_read, "connect": attack_connect,
          "chunks": attack_chunks}[a.attack]
    held, during, detail = fn(a, url)
    for h in held:
        (h.s if hasattr(h, "s") else h).close()
    stop.set()
    t.join()
    after = wait_rss(a.pid, a.settle)
    print(f"{a.attack} {before} {max(peak + [during])} {during} {after} {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
