#!/usr/bin/env bash
# Offline checks of the deployment files (ctest: deploy.manifests): every
# overlay renders and validates, qmlsim command lines in manifests and in the
# Slurm script parse with the real binary, and the checks do catch mistakes.
#   deploy/check.sh QMLSIM
set -euo pipefail
qmlsim=$(realpath "$1")
cd "$(dirname "$0")"
work=$(mktemp -d /tmp/qmlsim_deploy.XXXXXX)
trap 'rm -rf "$work"' EXIT
bash -n slurm/qmlsim.sbatch
for overlay in site overlays/cpu overlays/gpu overlays/object-storage; do
  out="$work/$(basename "$overlay").yaml"
  python3 k8s/render.py "k8s/$overlay" >"$out"
  (cd k8s && python3 validate.py "$qmlsim" "$out" ../slurm/qmlsim.sbatch)
done
grep -q "replicas: 4" "$work/site.yaml" || { echo "site patch not applied"; exit 1; }
grep -q "nvidia.com/gpu: 1" "$work/gpu.yaml" || { echo "gpu overlay without a GPU limit"; exit 1; }
if grep -q "PersistentVolumeClaim\|claimName" "$work/object-storage.yaml" ||
  [ "$(grep -c "name: qmlsim-s3" "$work/object-storage.yaml")" -lt 3 ]; then
  echo "object-storage overlay: a shared volume left, or a container without the qmlsim-s3 Secret"
  exit 1
fi
# The checks must fail on broken input.
expect_failure() {
  if (cd k8s && python3 validate.py "$qmlsim" "$work/bad.yaml" >/dev/null 2>&1); then
    echo "validate.py accepted $1"
    exit 1
  fi
}
sed 's/- --resume/- --resum/' "$work/site.yaml" >"$work/bad.yaml"
expect_failure "an unknown qmlsim flag"
sed 's/restartPolicy: OnFailure/restartPolicy: Sometimes/' "$work/site.yaml" >"$work/bad.yaml"
expect_failure "a bad restartPolicy"
sed 's|kubeflow.org/v2beta1|kubeflow.org/v1|' "$work/site.yaml" >"$work/bad.yaml"
expect_failure "an MPIJob of another API version"
sed 's/claimName: qmlsim-runs/claimName: qmlsim-runs\n      bogus: [/' "$work/site.yaml" >"$work/bad.yaml"
expect_failure "malformed YAML"
# The container recipe, statically: every COPY source exists, and every Debian
# package it installs exists in this machine's Debian 12 package lists.
for f in container/Dockerfile container/Dockerfile.cuda; do
  grep -E '^COPY ' "$f" | grep -v -- '--from=' | awk '{for (i = 2; i < NF; ++i) print $i}' |
    while read -r src; do
      [ -e "../$src" ] || { echo "$f: COPY source $src does not exist"; exit 1; }
    done
done
pkgs=$(awk '/apt-get install/ { grab = 1; print; next }
  grab { if ($0 ~ /^[ \t]*&&/) { grab = 0; next } print }' container/Dockerfile |
  tr ' \\' '\n\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' | grep -vE '^(apt-get|install)$' | sort -u)
if apt-cache policy build-essential 2>/dev/null | grep Candidate >/dev/null; then
  for p in $pkgs; do
    apt-cache policy "$p" | grep 'Candidate: [0-9]' >/dev/null || { echo "Dockerfile: no Debian package $p"; exit 1; }
  done
  echo "Dockerfile: $(echo $pkgs | wc -w) Debian packages exist"
else
  echo "Dockerfile: package lists absent (apt-get update), package names not checked"
fi
echo "deploy: manifests render and validate; broken ones are rejected"
