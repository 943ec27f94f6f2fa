#!/usr/bin/env python3
"""Records what OPC UA clients send a server, as seeds for fuzz_session.

A TCP proxy on 127.0.0.1:LISTEN forwards to 127.0.0.1:TARGET. For every
client connection on a channel with policy None it collects the bodies of
the MSG messages the client sends (chunks joined; the sequence header
dropped) and, when the connection ends, writes one seed file to OUTDIR:
two control bytes (0, 0), then per message [u16 LE length | kind 1 | body]
(kind 1: fuzz_session puts its own session's token into the body's
request header). Messages of 65,535 bytes or more are left out.

    capture_proxy.py LISTEN TARGET OUTDIR PREFIX
Runs until killed.
"""
import os
import socket
import struct
import sys
import threading


def pipe(src, dst, record):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if record is not None:
                record.extend(data)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def bodies(stream):
    """MSG bodies of a client byte stream (policy None)."""
    out, partial, pos = [], b"", 0
    while pos + 8 <= len(stream):
        mtype, ctype = stream[pos:pos + 3], stream[pos + 3:pos + 4]
        size = struct.unpack_from("<I", stream, pos + 4)[0]
        if size < 8 or pos + size > len(stream):
            break
        chunk = stream[pos:pos + size]
        pos += size
        if mtype != b"MSG" or size < 24:
            continue
        partial += chunk[24:]
        if ctype == b"F":
            out.append(partial)
            partial = b""
        elif ctype == b"A":
            partial = b""
    return out


def serve(listen, target, outdir, prefix):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen))
    srv.listen(16)
    n = 0
    while True:
        c, _ = srv.accept()
        s = socket.create_connection(("127.0.0.1", target))
        record = bytearray()
        n += 1
        name = os.path.join(outdir, "%s_%d.bin" % (prefix, n))

        def run(c=c, s=s, record=record, name=name):
            back = threading.Thread(target=pipe, args=(s, c, None))
            back.start()
            pipe(c, s, record)
            back.join()
            msgs = [b for b in bodies(bytes(record)) if len(b) + 1 < 65536]
            if msgs:
                with open(name, "wb") as f:
                    f.write(b"\0\0")
                    for b in msgs:
                        f.write(struct.pack("<H", len(b) + 1) + b"\1" + b)
            c.close()
            s.close()

        threading.Thread(target=run).start()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    serve(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
