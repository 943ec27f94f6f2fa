/* The measured server as a child process: started from the uaserver binary
 * itself in contract mode on an ephemeral loopback port, its CPU time, run
 * queue delay and memory read from /proc, so nothing the load generator
 * does is counted against the server. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loadgen_internal.h"

int lg_child_start(lg_child *c, const char *exe, unsigned threads, uint64_t cpus,
                   const char *const *extra)
{
    memset(c, 0, sizeof(*c));
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    char threads_s[16];
    snprintf(threads_s, sizeof(threads_s), "%u", threads);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        lg_pin_child(cpus);
        dup2(fds[1], STDOUT_FILENO);
        char *argv[32];
        int n = 0;
        argv[n++] = (char *)exe;
        argv[n++] = "--contract";
        argv[n++] = "--port";
        argv[n++] = "0";
        argv[n++] = "--bind";
        argv[n++] = "127.0.0.1";
        argv[n++] = "--threads";
        argv[n++] = threads_s;
        argv[n++] = "--log-level";
        argv[n++] = "warn";
        for (int i = 0; extra && extra[i] && n < 31; i++)
            argv[n++] = (char *)extra[i];
        argv[n] = NULL;
        execv(exe, argv);
        _exit(127);
    }
    close(fds[1]);
    c->pid = pid;
    c->out_fd = fds[0];
    /* Wait for "uaserver listening on opc.tcp://127.0.0.1:PORT". */
    char buf[512];
    size_t len = 0;
    int64_t deadline = uas_monotonic_ms() + 15000;
    while (uas_monotonic_ms() < deadline && len < sizeof(buf) - 1) {
        struct pollfd p = {c->out_fd, POLLIN, 0};
        if (poll(&p, 1, 200) <= 0)
            continue;
        ssize_t r = read(c->out_fd, buf + len, sizeof(buf) - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        buf[len] = 0;
        char *m = strstr(buf, "listening on ");
        char *nl = m ? strchr(m, '\n') : NULL;
        if (m && nl) {
            *nl = 0;
            snprintf(c->url, sizeof(c->url), "%s", m + strlen("listening on "));
            return 0;
        }
    }
    lg_child_stop(c);
    return -1;
}

void lg_child_stop(lg_child *c)
{
    if (c->pid <= 0)
        return;
    kill(c->pid, SIGTERM);
    int64_t deadline = uas_monotonic_ms() + 5000;
    int status;
    while (waitpid(c->pid, &status, WNOHANG) == 0) {
        if (uas_monotonic_ms() > deadline) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &status, 0);
            break;
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    close(c->out_fd);
    c->pid = 0;
}

/* Busy time of all processors since boot: every /proc/stat column of the
 * "cpu" line but idle and iowait. */
static uint64_t machine_busy_ns(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return 0;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n != 8)
        return 0;
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    return busy * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
}

static uint64_t self_cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

int lg_child_sample(const lg_child *c, lg_proc_sample *s)
{
    memset(s, 0, sizeof(*s));
    s->wall_ns = lg_now_ns();
    s->self_cpu_ns = self_cpu_ns();
    s->machine_cpu_ns = machine_busy_ns();
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)c->pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    /* Fields after the command name, which may contain spaces. */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long utime = 0, stime = 0;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    s->cpu_ns = (utime + stime) * (1000000000ull / (unsigned long long)hz);
    /* Run-queue delay, summed over the server's threads: time they were
     * runnable but had no CPU (reported; see lg_judge_window). */
    snprintf(path, sizeof(path), "/proc/%d/task", (int)c->pid);
    DIR *dir = opendir(path);
    struct dirent *de;
    while (dir && (de = readdir(dir))) {
        if (de->d_name[0] == '.')
            continue;
        char tpath[320];
        snprintf(tpath, sizeof(tpath), "/proc/%d/task/%s/schedstat", (int)c->pid, de->d_name);
        FILE *tf = fopen(tpath, "r");
        if (!tf)
            continue;
        unsigned long long run, wait;
        if (fscanf(tf, "%llu %llu", &run, &wait) == 2) {
            s->runq_ns += wait;
            s->run_ns += run;
        }
        fclose(tf);
    }
    if (dir)
        closedir(dir);
    snprintf(path, sizeof(path), "/proc/%d/status", (int)c->pid);
    f = fopen(path, "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof(line), f))
            if (!strncmp(line, "VmRSS:", 6))
                s->rss_kb = strtoull(line + 6, NULL, 10);
        fclose(f);
    }
    return 0;
}

/* Other processes' share above which a round is flagged: a tenth of a core
 * on average. Below it the noise of /proc/stat's 10 ms ticks and of the
 * kernel's own threads dominates. */
#define LG_FOREIGN_CORES_MAX 0.10

void lg_judge_window(const lg_proc_sample *a, const lg_proc_sample *b, double server_cpu_ns,
                     uas_result *r)
{
    double wall = (double)(b->wall_ns - a->wall_ns);
    r->runq_share = server_cpu_ns > 0 ? (double)(b->runq_ns - a->runq_ns) / server_cpu_ns : 0;
    r->foreign_cores = -1;
    r->disturbed = false;
    if (wall <= 0 || !a->machine_cpu_ns || !b->machine_cpu_ns)
        return;
    double machine = (double)(b->machine_cpu_ns - a->machine_cpu_ns);
    double self = (double)(b->self_cpu_ns - a->self_cpu_ns);
    double foreign = machine - server_cpu_ns - self;
    r->foreign_cores = foreign > 0 ? foreign / wall : 0;
    r->disturbed = r->foreign_cores > LG_FOREIGN_CORES_MAX;
}

uint64_t lg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
