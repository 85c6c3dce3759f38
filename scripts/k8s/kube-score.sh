#!/usr/bin/env bash
# kube-score (scripts/k8s/build-kube-score.sh) on rendered manifests read from stdin, e.g.
#   helm template media charts/media-service --set networkPolicy.enabled=true | bash scripts/k8s/kube-score.sh
# with the checks the chart departs from on purpose skipped, each with its reason below (and in
# docs/kubernetes.md, "kube-score"); one object's exception is a `kube-score/ignore` annotation on it,
# beside its reason. Extra arguments go to `kube-score score` (e.g. --output-format json). Exit status:
# kube-score's (1 when a check is CRITICAL). test/k8s/kube-score.test.ts runs it on the chart's renders.
#
# Environment:
#   KUBE_SCORE  the kube-score binary (default: the cached build, built on first use)
set -euo pipefail

KUBE_SCORE="${KUBE_SCORE:-$(MEDIA_KUBE_SCORE_PRINT_BIN=1 bash "$(dirname "${BASH_SOURCE[0]}")/build-kube-score.sh")}"

ignored=(
  # It wants imagePullPolicy: Always, against a moving tag. The chart's image is a release's version
  # tag or a digest (image.tag, image.digest), which never moves: IfNotPresent (image.pullPolicy)
  # spares every pod start a registry round trip, and clusters without a registry load the image
  # (Never).
  container-image-pull-policy
)

args=()
for check in "${ignored[@]}"; do args+=(--ignore-test "$check"); done
exec "$KUBE_SCORE" score "${args[@]}" "$@" -
