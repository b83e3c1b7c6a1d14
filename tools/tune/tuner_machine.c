/*
 * What numacoll-tune's header says about the machine: CPU model (hwloc's
 * CPUModel info, else /proc/cpuinfo), cores, PUs and NUMA nodes (hwloc),
 * and the same counts for a --topology description when one is given.
 */
#include <hwloc.h>
#include <stdio.h>
#include <string.h>

#include "tools/tune/tuner.h"

static void counts(hwloc_topology_t t, int *cores, int *pus, int *numa)
{
    *cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    *pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
    *numa = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    if (*cores <= 0)
        *cores = *pus;   /* some topologies have no core level */
    if (*numa <= 0)
        *numa = 1;
}

static void cpu_model(hwloc_topology_t t, char *out, size_t len)
{
    const char *v = NULL;
    hwloc_obj_t pkg = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
    if (pkg)
        v = hwloc_obj_get_info_by_name(pkg, "CPUModel");
    if (!v)
        v = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "CPUModel");
    if (v && *v) {
        snprintf(out, len, "%s", v);
        return;
    }
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *c = strchr(line, ':');
        if (!c)
            continue;
        c++;
        while (*c == ' ' || *c == '\t')
            c++;
        snprintf(out, len, "%.*s", (int)strcspn(c, "\n"), c);
        break;
    }
    if (f)
        fclose(f);
}

void tn_machine_probe(const char *topology, tn_machine_t *mc)
{
    memset(mc, 0, sizeof *mc);
    snprintf(mc->cpu, sizeof mc->cpu, "unknown CPU");
    unsigned v = hwloc_get_api_version();
    snprintf(mc->hwloc, sizeof mc->hwloc, "%u.%u.%u", v >> 16,
             (v >> 8) & 0xff, v & 0xff);
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) == 0) {
        if (hwloc_topology_load(t) == 0) {
            counts(t, &mc->cores, &mc->pus, &mc->numa);
            cpu_model(t, mc->cpu, sizeof mc->cpu);
        }
        hwloc_topology_destroy(t);
    }
    if (!topology || hwloc_topology_init(&t) != 0)
        return;
    int rc = strncmp(topology, "synthetic:", 10) == 0
                 ? hwloc_topology_set_synthetic(t, topology + 10)
                 : hwloc_topology_set_xml(t, topology);
    if (rc == 0 && hwloc_topology_load(t) == 0) {
        int c, p, n;
        counts(t, &c, &p, &n);
        mc->topo_cores = c;
        snprintf(mc->topo_note, sizeof mc->topo_note,
                 "%.120s: %d cores, %d PUs, %d NUMA node%s (rank r on PU r)",
                 topology, c, p, n, n == 1 ? "" : "s");
    } else {
        snprintf(mc->topo_note, sizeof mc->topo_note,
                 "%.120s (hwloc cannot read it)", topology);
    }
    hwloc_topology_destroy(t);
}
