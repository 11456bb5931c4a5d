/* What a hostile process inside a container tries on every berth process it can see in its pid
 * namespace (a process whose comm is "berth": an exec's helper before its execve). Used by
 * tests/exec_isolation.rs, built there with `gcc -static`.
 *
 *   probe DIR SECRET   watches until DIR/stop exists, then writes DIR/result:
 *     seen=N        berth processes seen
 *     environ=N     of those, /proc/PID/environ could be read (non-empty)
 *     secret=N      ... and contained SECRET
 *     cmdline=N     /proc/PID/cmdline contained SECRET
 *     exe=N         /proc/PID/exe could be opened
 *     ptrace=N      PTRACE_SEIZE succeeded while it was still berth (then detached)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_SEEN 4096

static int seen_pids[MAX_SEEN];
static int seen_count;

static int already_seen(int pid) {
    for (int i = 0; i < seen_count; i++)
        if (seen_pids[i] == pid)
            return 1;
    if (seen_count < MAX_SEEN)
        seen_pids[seen_count++] = pid;
    return 0;
}

static ssize_t read_file(const char *path, char *buffer, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t total = 0, n;
    while (total < (ssize_t)size && (n = read(fd, buffer + total, size - total)) > 0)
        total += n;
    close(fd);
    return total;
}

static int contains(const char *haystack, size_t length, const char *needle) {
    size_t needle_length = strlen(needle);
    for (size_t i = 0; i + needle_length <= length; i++)
        if (memcmp(haystack + i, needle, needle_length) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: probe DIR SECRET\n");
        return 2;
    }
    char stop[4096], result[4096], path[64], buffer[65536];
    snprintf(stop, sizeof stop, "%s/stop", argv[1]);
    snprintf(result, sizeof result, "%s/result", argv[1]);
    const char *secret = argv[2];
    int self = getpid();
    long seen = 0, environ_read = 0, secret_found = 0, cmdline_found = 0, exe_opened = 0,
         attached = 0;
    while (access(stop, F_OK) != 0) {
        DIR *proc = opendir("/proc");
        if (!proc)
            return 1;
        struct dirent *entry;
        while ((entry = readdir(proc))) {
            int pid = atoi(entry->d_name);
            if (pid <= 0 || pid == self)
                continue;
            snprintf(path, sizeof path, "/proc/%d/comm", pid);
            ssize_t n = read_file(path, buffer, sizeof buffer - 1);
            if (n <= 0 || strncmp(buffer, "berth\n", 6) != 0 || already_seen(pid))
                continue;
            seen++;
            /* The fast checks first, while the process is still berth. */
            snprintf(path, sizeof path, "/proc/%d/environ", pid);
            n = read_file(path, buffer, sizeof buffer);
            if (n > 0) {
                environ_read++;
                secret_found += contains(buffer, n, secret);
            }
            snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
            n = read_file(path, buffer, sizeof buffer);
            if (n > 0)
                cmdline_found += contains(buffer, n, secret);
            snprintf(path, sizeof path, "/proc/%d/exe", pid);
            int exe = open(path, O_RDONLY | O_CLOEXEC);
            if (exe >= 0) {
                exe_opened++;
                close(exe);
            }
            /* PTRACE_SEIZE asks the kernel's same permission as PTRACE_ATTACH, without
             * PTRACE_ATTACH's SIGSTOP: a SIGSTOP still pending when the probe detaches (it may
             * see the SIGTRAP of an execve under way first) would stop the process for good. */
            if (ptrace(PTRACE_SEIZE, pid, 0, 0) == 0) {
                ptrace(PTRACE_INTERRUPT, pid, 0, 0);
                int status;
                while (waitpid(pid, &status, __WALL) == pid && WIFSTOPPED(status)) {
                    if ((status >> 16) == PTRACE_EVENT_STOP) {
                        /* Stopped now, so its name holds still. If it is berth no more, the
                         * helper had already run the container's program (which anyone there
                         * may trace) between the look at its name and the seize: a slow probe,
                         * not a leak. */
                        snprintf(path, sizeof path, "/proc/%d/comm", pid);
                        n = read_file(path, buffer, sizeof buffer - 1);
                        if (n > 0 && strncmp(buffer, "berth\n", 6) == 0)
                            attached++;
                        ptrace(PTRACE_DETACH, pid, 0, 0);
                        break;
                    }
                    /* A signal on its way first: pass it on and wait for the interrupt. */
                    ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(status));
                }
            }
        }
        closedir(proc);
    }
    FILE *out = fopen(result, "w");
    if (!out)
        return 1;
    fprintf(out, "seen=%ld environ=%ld secret=%ld cmdline=%ld exe=%ld ptrace=%ld\n", seen,
            environ_read, secret_found, cmdline_found, exe_opened, attached);
    fclose(out);
    return 0;
}
