#!/usr/bin/env python3
"""Renders a kustomization offline, for machines without kubectl/kustomize.

Supports the subset this repository uses: `resources` (files, or folders with a
kustomization.yaml), `namespace`, `images` (name -> newName:newTag) and `patches`
with a target {kind, name} and a JSON 6902 patch (op add / replace / remove), or
without a target, a strategic-merge patch deleting an object (`$patch: delete`).
`kubectl apply -k` reads the same files.

  render.py DIR [--kind Kind,Kind]   # prints the multi-document YAML
"""
import argparse
import copy
import os
import sys

import yaml


def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def pointer(doc, path):
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]
    parent = doc
    for p in parts[:-1]:
        parent = parent[int(p)] if isinstance(parent, list) else parent[p]
    return parent, parts[-1]


def apply_patch(doc, ops, where):
    for op in ops:
        parent, key = pointer(doc, op["path"])
        if isinstance(parent, list):
            key = len(parent) if key == "-" else int(key)
        if op["op"] == "replace":
            if (isinstance(parent, dict) and key not in parent) or (
                    isinstance(parent, list) and key >= len(parent)):
                sys.exit(f"{where}: replace of missing path {op['path']}")
            parent[key] = copy.deepcopy(op["value"])
        elif op["op"] == "add":
            if isinstance(parent, list):
                parent.insert(key, copy.deepcopy(op["value"]))
            else:
                parent[key] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            del parent[key]
        else:
            sys.exit(f"{where}: unsupported patch op {op['op']}")


def containers(doc):
    spec = doc.get("spec", {})
    templates = []
    if doc["kind"] == "MPIJob":
        templates = [r["template"] for r in spec.get("mpiReplicaSpecs", {}).values()]
    elif "template" in spec:
        templates = [spec["template"]]
    for t in templates:
        yield from t.get("spec", {}).get("containers", [])


def render(folder):
    kfile = os.path.join(folder, "kustomization.yaml")
    k = load_docs(kfile)[0]
    docs = []
    for r in k.get("resources", []):
        path = os.path.normpath(os.path.join(folder, r))
        docs += render(path) if os.path.isdir(path) else load_docs(path)
    for p in k.get("patches", []):
        if "target" not in p:
            doc = yaml.safe_load(p["patch"])
            if doc.get("$patch") != "delete":
                sys.exit(f"{kfile}: a patch without a target must be a $patch: delete")
            name = doc["metadata"]["name"]
            kept = [d for d in docs if not (d["kind"] == doc["kind"]
                                            and d["metadata"]["name"] == name)]
            if len(kept) == len(docs):
                sys.exit(f"{kfile}: $patch: delete of {doc['kind']}/{name} matches nothing")
            docs = kept
            continue
        target = p["target"]
        hits = [d for d in docs if d["kind"] == target["kind"]
                and d["metadata"]["name"] == target["name"]]
        if not hits:
            sys.exit(f"{kfile}: patch target {target} matches nothing")
        for d in hits:
            apply_patch(d, yaml.safe_load(p["patch"]), kfile)
    for image in k.get("images", []):
        for d in docs:
            for c in containers(d):
                if c["image"].split(":")[0] == image["name"]:
                    c["image"] = f"{image.get('newName', image['name'])}:{image.get('newTag', 'latest')}"
    if "namespace" in k:
        for d in docs:
            d["metadata"]["namespace"] = k["namespace"]
    return docs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--kind", default="", help="comma-separated kinds to keep")
    args = ap.parse_args()
    docs = render(args.folder)
    if args.kind:
        keep = set(args.kind.split(","))
        docs = [d for d in docs if d["kind"] in keep]
    yaml.safe_dump_all(docs, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
