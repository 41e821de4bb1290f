#!/usr/bin/env python3
"""Validates rendered manifests offline: well-formed YAML; every object against
the required structure of its kind (the MPI Operator's MPIJob v2beta1 as its CRD
defines it, and the core objects used here); every qmlsim command line in a
container through the real binary's argument parser (`... --help` parses all
flags first, so an unknown flag or bad value fails).

  validate.py QMLSIM RENDERED.yaml [SBATCH_SCRIPT ...]
"""
import re
import shlex
import subprocess
import sys

import yaml

ERRORS = []


def need(cond, where, what):
    if not cond:
        ERRORS.append(f"{where}: {what}")
    return cond


def check_container(c, where):
    need(isinstance(c.get("name"), str) and c["name"], where, "container without a name")
    need(isinstance(c.get("image"), str) and c["image"], where, "container without an image")
    for key in ("command", "args"):
        if key in c:
            need(all(isinstance(a, str) for a in c[key]), where, f"{key} must be strings")
    for q in ("requests", "limits"):
        for k, v in c.get("resources", {}).get(q, {}).items():
            need(isinstance(v, (str, int)), where, f"resources.{q}.{k} must be a quantity")


def check_pod_template(t, where):
    spec = t.get("spec")
    if not need(isinstance(spec, dict), where, "template.spec missing"):
        return
    cs = spec.get("containers")
    if need(isinstance(cs, list) and cs, where, "template.spec.containers must be a non-empty list"):
        for c in cs:
            check_container(c, where)
    volumes = {v["name"] for v in spec.get("volumes", [])}
    for c in cs or []:
        for m in c.get("volumeMounts", []):
            need(m["name"] in volumes, where, f"volumeMount {m['name']} has no volume")


def check_mpijob(d, where):
    need(d["apiVersion"] == "kubeflow.org/v2beta1", where, "MPIJob must be kubeflow.org/v2beta1")
    spec = d.get("spec", {})
    rs = spec.get("mpiReplicaSpecs", {})
    need(set(rs) <= {"Launcher", "Worker"} and "Launcher" in rs, where,
         "mpiReplicaSpecs: Launcher (and Worker) only")
    need(rs.get("Launcher", {}).get("replicas", 1) == 1, where, "Launcher replicas must be 1")
    need(spec.get("mpiImplementation", "OpenMPI") in ("OpenMPI", "Intel", "MPICH"), where,
         "mpiImplementation: OpenMPI, Intel or MPICH")
    need(isinstance(spec.get("slotsPerWorker", 1), int), where, "slotsPerWorker: integer")
    run = spec.get("runPolicy", {})
    need(run.get("cleanPodPolicy", "None") in ("None", "Running", "All"), where,
         "runPolicy.cleanPodPolicy: None, Running or All")
    need(isinstance(run.get("backoffLimit", 0), int), where, "runPolicy.backoffLimit: integer")
    for name, r in rs.items():
        w = f"{where} {name}"
        need(isinstance(r.get("replicas", 1), int) and r.get("replicas", 1) >= 1, w, "replicas >= 1")
        need(r.get("restartPolicy", "Never") in ("Always", "OnFailure", "Never", "ExitCode"), w,
             "restartPolicy: Always, OnFailure, Never or ExitCode")
        check_pod_template(r.get("template", {}), w)


def check_object(d, where):
    for key in ("apiVersion", "kind", "metadata"):
        need(key in d, where, f"{key} missing")
    name = d.get("metadata", {}).get("name", "")
    need(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name or "") is not None, where,
         f"metadata.name '{name}' is not a DNS-1123 label")
    kind = d.get("kind")
    where = f"{where} {kind}/{name}"
    spec = d.get("spec", {})
    if kind == "MPIJob":
        check_mpijob(d, where)
    elif kind == "Deployment":
        need(d["apiVersion"] == "apps/v1", where, "apps/v1")
        sel = spec.get("selector", {}).get("matchLabels", {})
        labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
        need(sel and all(labels.get(k) == v for k, v in sel.items()), where,
             "selector.matchLabels must match the template's labels")
        check_pod_template(spec.get("template", {}), where)
    elif kind == "Service":
        need(d["apiVersion"] == "v1", where, "v1")
        need(spec.get("ports") and all("port" in p for p in spec["ports"]), where, "ports with port")
        need(bool(spec.get("selector")), where, "selector")
    elif kind == "Job":
        need(d["apiVersion"] == "batch/v1", where, "batch/v1")
        need(spec.get("template", {}).get("spec", {}).get("restartPolicy") in ("Never", "OnFailure"),
             where, "Job pods: restartPolicy Never or OnFailure")
        check_pod_template(spec.get("template", {}), where)
    elif kind == "PersistentVolumeClaim":
        need(d["apiVersion"] == "v1", where, "v1")
        need(spec.get("accessModes"), where, "accessModes")
        need(spec.get("resources", {}).get("requests", {}).get("storage"), where, "storage request")
    else:
        need(False, where, f"no schema for kind {kind}")


def qmlsim_commands(d):
    """qmlsim argument lists in the object's containers."""
    from render import containers
    for c in containers(d):
        line = c.get("command", []) + c.get("args", [])
        if "qmlsim" in line:
            yield line[line.index("qmlsim") + 1:]
        elif not c.get("command") and c.get("args") and c["image"].split(":")[0].endswith("qmlsim"):
            yield c["args"]  # the image's entry point is qmlsim


def check_cli(binary, argv, where):
    out = subprocess.run([binary] + argv + ["--help"], capture_output=True, text=True)
    need(out.returncode == 0, where, f"qmlsim {' '.join(argv)}: {out.stderr.strip()}")


def main():
    binary, rendered, scripts = sys.argv[1], sys.argv[2], sys.argv[3:]
    try:
        docs = list(yaml.safe_load_all(open(rendered)))
    except yaml.YAMLError as e:
        sys.exit(f"{rendered}: not well-formed YAML: {e}")
    commands = 0
    for i, d in enumerate(docs):
        check_object(d, f"{rendered}#{i}")
        for argv in qmlsim_commands(d):
            check_cli(binary, argv, f"{rendered}#{i}")
            commands += 1
    for s in scripts:  # srun/mpirun lines of batch scripts; "$QMLSIM" is the binary
        for line in open(s):
            if line.lstrip().startswith("#"):
                continue
            words = shlex.split(line)
            at = next((i for i, w in enumerate(words) if w in ("qmlsim", "$QMLSIM")), None)
            if at is None:
                continue
            # Shell variables stand for values: a number parses as any flag's value.
            argv = ["1" if w.startswith("$") else w for w in words[at + 1:]]
            check_cli(binary, argv, s)
            commands += 1
    if ERRORS:
        print("\n".join(ERRORS), file=sys.stderr)
        sys.exit(1)
    print(f"{rendered}: {len(docs)} objects valid, {commands} qmlsim command lines parse")


if __name__ == "__main__":
    main()
