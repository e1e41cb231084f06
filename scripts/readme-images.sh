#!/usr/bin/env bash
# Remakes the docs' pictures in docs/img/ from real runs on the CPU: the sweep demo
# (configs/sweep-demo-fmnist.yaml: its sweep plot, a point's curves with their band across
# seeds, a run's partition heatmap, attention-rollout map and client-embedding t-SNE, and a
# screenshot of its report) and a 10-round demo suite (configs/demo-fmnist.yaml: TransFed's
# focal-modulation map and the gain density over Local). Each picture is downscaled to 640
# pixels wide (the six-row map sheet 420) and quantized to 64 colours (ImageMagick's
# convert; where another program shadows it, put ImageMagick's first: PATH=/usr/bin:$PATH).
# Needs bin/pfl (scripts/build.sh), ImageMagick and chromium-headless-shell (or chromium).
#
# Then docs/figures.md's pictures, docs/img/fig-*.png: every kind of figure pfl draws,
# from the small synthetic runs of TestFigures (engine/report) and
# TestHeatmapNamesItsPartition (engine/data), as pfl writes them (already small: no
# downscaling). `scripts/readme-images.sh --figures` makes only these; they need Go alone.
set -euo pipefail
cd "$(dirname "$0")/.."
img=docs/img
mkdir -p "$img"

figures() { # the synthetic figures of docs/figures.md
  local f
  f=$(mktemp -d)
  PFL_FIGURES="$f" go test ./engine/report -run '^TestFigures$' -count=1
  PFL_FIGURES="$f" go test ./engine/data -run '^TestHeatmapNamesItsPartition$' -count=1
  cp "$f/run-curves/accuracy.png" "$img/fig-run-accuracy.png"
  cp "$f/run-curves/loss.png" "$img/fig-run-loss.png"
  cp "$f/run-curves/clients.png" "$img/fig-run-clients.png"
  cp "$f/comparison/compare.png" "$img/fig-compare.png"
  cp "$f/bands-over-seeds/bands.png" "$img/fig-bands.png"
  cp "$f/sweep-and-per-client-sweep/sweep-accuracy-fedtp.png" "$img/fig-sweep.png"
  cp "$f/sweep-and-per-client-sweep/clients-fedavg.png" "$img/fig-sweep-clients.png"
  cp "$f/gain-density/gain_density.png" "$img/fig-gain-density.png"
  cp "$f/novel-clients/novel.png" "$img/fig-novel.png"
  cp "$f/accuracy-distribution/distribution-1.png" "$img/fig-distribution-one.png"
  cp "$f/accuracy-distribution/distribution-2.png" "$img/fig-distribution.png"
  cp "$f/t-SNE/embeddings_tsne.png" "$img/fig-tsne.png"
  cp "$f/partition-dirichlet.png" "$img/fig-partition-dirichlet.png"
  cp "$f/partition-pathological.png" "$img/fig-partition-pathological.png"
  rm -rf "$f"
}
if [ "${1:-}" = --figures ]; then
  figures
  ls -l "$img"/fig-*.png
  exit
fi

out=${1:-runs/readme}
sweep=$out/sweep-demo-fmnist
[ -f "$sweep/results.md" ] || bin/pfl train -c configs/sweep-demo-fmnist.yaml --set out="$out" --overwrite
run=$sweep/data.alpha=0.1/fedtp/seed-1
[ -f "$run/maps/maps.json" ] || bin/pfl maps -images 4 "$run"
bin/pfl report "$sweep"
suite=$out/demo-fmnist
[ -f "$suite/results.md" ] || bin/pfl train --set out="$out" --set train.rounds=10 --overwrite
[ -f "$suite/maps/maps.json" ] || bin/pfl maps -images 4 "$suite"

browser=$(command -v chromium-headless-shell || command -v chromium)
shot=$(mktemp -d)
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$shot/profile" \
  --screenshot="$shot/report.png" --window-size=1280,1600 "file://$(realpath "$sweep/report.html")"

small() { # small <source> <name> [width] [colours]: 640 wide, 64 colours by default
  convert "$1" -resize "${3:-640}x>" -colors "${4:-64}" -strip "PNG8:$img/$2.png"
}
small "$sweep/sweep-accuracy-fedtp.png" sweep
small "$sweep/data.alpha=0.1/accuracy.png" accuracy-curves
small "$run/partition.png" partition
small "$run/maps/client0.png" rollout
small "$suite/maps/client0.png" focal 420 48 # six rows of photographs: smaller
small "$run/embeddings_tsne.png" tsne
small "$suite/gain_density.png" gain-density
small "$shot/report.png" report
rm -rf "$shot"
figures
ls -l "$img"
