/* A device program embedding uastack: one namespace, a temperature sensor
 * read through a data source, a writable set point with a write callback,
 * and a Reset method. Run: embed_example [--port N] [--exit-after MS].
 * With --exit-after the program drives the server from its own poll()
 * loop, and SIGUSR1 prints the heap the stack holds (benchmarks/embed_heap.sh). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ua/nodeids.h>
#include <ua/server.h>

static uas_server *server;
static volatile sig_atomic_t stop_requested, heap_report;
static double set_point = 21.5;

/* Data source: called on every Read of Sensor.Temperature. */
static uas_status read_temperature(void *ud, const uas_nodeid *node, uas_datavalue *out,
                                   uas_arena *arena)
{
    (void)ud;
    (void)node;
    double *t = uas_arena_alloc(arena, sizeof(double));
    if (!t)
        return UAS_BAD_OUT_OF_MEMORY;
    *t = 20.0 + (double)(time(NULL) % 10) / 10.0; /* a real device reads its sensor here */
    uas_variant_set_scalar(&out->value, t, UAS_TYPE(DOUBLE));
    out->has_value = true;
    out->source_timestamp = uas_datetime_now();
    out->has_source_timestamp = true;
    return UAS_GOOD;
}

/* Write callback: refuse set points outside the device's range. */
static uas_status write_set_point(void *ud, const uas_nodeid *node, const uas_datavalue *in)
{
    (void)ud;
    (void)node;
    double v = *(const double *)in->value.data;
    if (v < 5.0 || v > 35.0)
        return UAS_BAD_OUT_OF_RANGE;
    set_point = v;
    return UAS_GOOD;
}

static uas_status reset(void *ud, const uas_nodeid *object, const uas_nodeid *method,
                        size_t in_count, const uas_variant *in, size_t *out_count,
                        uas_variant **out, uas_arena *arena)
{
    (void)ud, (void)object, (void)method, (void)in_count, (void)in, (void)arena;
    set_point = 21.5;
    uas_variant v;
    uas_variant_set_scalar(&v, &set_point, UAS_TYPE(DOUBLE));
    uas_nodeid id = uas_nodeid_string(2, "Sensor.SetPoint");
    *out_count = 0;
    *out = NULL;
    return uas_server_write_value(server, &id, &v);
}

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
    uas_server_request_stop(server);
}

static void on_usr1(int sig)
{
    (void)sig;
    heap_report = 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: embed_example [--port N] [--exit-after MS]\n"
               "  --port N          TCP port on 127.0.0.1 (default 4841, 0 = ephemeral)\n"
               "  --exit-after MS   stop after MS milliseconds (default: run until Ctrl-C);\n"
               "                    runs the program's own poll() loop, where SIGUSR1\n"
               "                    prints the heap the stack holds\n"
               "Serves ns=2;s=Sensor with Temperature (data source), SetPoint (write\n"
               "callback refusing values above 40) and the Reset method.\n");
}

static bool parse_ulong(const char *v, unsigned long *out)
{
    char *end;
    if (!v || !*v || *v == '-')
        return false;
    errno = 0;
    *out = strtoul(v, &end, 10);
    return !*end && errno == 0 && *out <= 86400000UL;
}

int main(int argc, char **argv)
{
    /* libev's allocations count too (uas_mem_get_stats). */
    (void)uas_mem_count_libraries();
    uas_server_config cfg;
    uas_server_config_default(&cfg);
    cfg.port = 4841;
    cfg.threads = 1;
    cfg.bind_address = "127.0.0.1";
    /* A bench demo: anonymous clients may set the setpoint and reset it.
     * The default lets them only browse and read; a real device maps
     * users to Operator/Engineer instead (docs/Security.md). */
    cfg.role_permissions =
        "urn:example:device Anonymous Browse,Read,ReceiveEvents,ReadHistory,Write,Call";
    long exit_after = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long n = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if ((strcmp(a, "--port") && strcmp(a, "--exit-after")) || !parse_ulong(v, &n) ||
            (!strcmp(a, "--port") && n > 65535)) {
            fprintf(stderr, "embed_example: unknown option, missing or bad value: '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (!strcmp(a, "--port"))
            cfg.port = (uint16_t)n;
        else
            exit_after = (long)n;
        i++;
    }
    uas_status st;
    server = uas_server_new(&cfg, &st);
    if (!server) {
        fprintf(stderr, "embed_example: %s\n", uas_status_name(st));
        return 1;
    }
    uint16_t ns = uas_server_add_namespace(server, "urn:example:device");

    uas_nodeid sensor = uas_nodeid_string(ns, "Sensor");
    uas_nodeid objects = uas_nodeid_numeric(0, UAS_NS0ID_OBJECTSFOLDER);
    uas_nodeid organizes = uas_nodeid_numeric(0, UAS_NS0ID_ORGANIZES);
    uas_nodeid has_component = uas_nodeid_numeric(0, UAS_NS0ID_HASCOMPONENT);
    uas_nodeid object_type = uas_nodeid_numeric(0, UAS_NS0ID_BASEOBJECTTYPE);
    uas_nodeid var_type = uas_nodeid_numeric(0, UAS_NS0ID_BASEDATAVARIABLETYPE);
    uas_qualifiedname bn = {ns, uas_string_from("Sensor")};
    uas_object_attributes oa = {0};
    oa.display_name.text = uas_string_from("Sensor");
    st = uas_server_add_object(server, &sensor, &objects, &organizes, &bn, &object_type, &oa);

    uas_variable_attributes va = {0};
    va.data_type = uas_nodeid_numeric(0, UAS_NS0ID_DOUBLE);
    va.value_rank = -1;
    va.access_level = va.user_access_level = 0x01; /* CurrentRead */
    va.display_name.text = uas_string_from("Temperature");
    uas_nodeid temp = uas_nodeid_string(ns, "Sensor.Temperature");
    uas_qualifiedname tbn = {ns, uas_string_from("Temperature")};
    if (st == UAS_GOOD)
        st = uas_server_add_variable(server, &temp, &sensor, &has_component, &tbn, &var_type, &va);
    if (st == UAS_GOOD)
        st = uas_server_set_data_source(server, &temp, read_temperature, NULL, NULL);

    va.access_level = va.user_access_level = 0x03; /* CurrentRead | CurrentWrite */
    va.display_name.text = uas_string_from("SetPoint");
    uas_variant_set_scalar(&va.value, &set_point, UAS_TYPE(DOUBLE));
    uas_nodeid sp = uas_nodeid_string(ns, "Sensor.SetPoint");
    uas_qualifiedname sbn = {ns, uas_string_from("SetPoint")};
    if (st == UAS_GOOD)
        st = uas_server_add_variable(server, &sp, &sensor, &has_component, &sbn, &var_type, &va);
    if (st == UAS_GOOD)
        st = uas_server_set_data_source(server, &sp, NULL, write_set_point, NULL);

    uas_method_attributes ma = {0};
    ma.display_name.text = uas_string_from("Reset");
    ma.executable = ma.user_executable = true;
    uas_nodeid m = uas_nodeid_string(ns, "Sensor.Reset");
    uas_qualifiedname mbn = {ns, uas_string_from("Reset")};
    if (st == UAS_GOOD)
        st = uas_server_add_method(server, &m, &sensor, &has_component, &mbn, &ma, 0, NULL, 0, NULL,
                                   reset, NULL);
    if (st == UAS_GOOD)
        st = uas_server_listen(server);
    if (st != UAS_GOOD) {
        fprintf(stderr, "embed_example: %s\n", uas_status_name(st));
        uas_server_delete(server);
        return 1;
    }
    printf("embed_example listening on opc.tcp://127.0.0.1:%u\n", uas_server_port(server));
    fflush(stdout);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (exit_after > 0) {
        /* Drive the server from the program's own poll() loop, as a device
         * would (docs/Embedding.md, "Foreign event loop"). */
        /* sigaction: under _POSIX_C_SOURCE, signal() resets the handler
         * after the first delivery. */
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, NULL);
        struct pollfd fds[64];
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        long elapsed = 0;
        while (!stop_requested && elapsed < exit_after) {
            size_t n;
            int timeout;
            if (uas_server_get_pollfds(server, fds, 64, &n, &timeout) != UAS_GOOD)
                n = 0, timeout = 10; /* more than 64 sockets: serve them by polling */
            if (timeout < 0 || timeout > exit_after - elapsed)
                timeout = (int)(exit_after - elapsed);
            (void)poll(fds, n, timeout);
            uas_server_process(server);
            if (heap_report) {
                heap_report = 0;
                uas_mem_stats ms;
                uas_mem_get_stats(&ms);
                printf("heap: %llu bytes held, %llu allocations, %llu frees\n",
                       (unsigned long long)ms.bytes_live, (unsigned long long)ms.allocs,
                       (unsigned long long)ms.frees);
                fflush(stdout);
            }
            clock_gettime(CLOCK_MONOTONIC, &now);
            elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        }
    } else {
        uas_server_run(server);
    }
    uas_server_delete(server);
    return 0;
}
