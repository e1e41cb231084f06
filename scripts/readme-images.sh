#!/usr/bin/env bash
# Remakes the docs' pictures in docs/img/ from real runs on the CPU: the sweep demo
# (configs/sweep-demo-fmnist.yaml: its sweep plot, a point's curves with their band across
# seeds, a run's partition heatmap, attention-rollout map and client-embedding t-SNE, and a
# screenshot of its report) and a 10-round demo suite (configs/demo-fmnist.yaml: TransFed's
# focal-modulation map and the gain density over Local). Each picture is downscaled to 640
# pixels wide (the six-row map sheet 420) and quantized to 64 colours (ImageMagick's
# convert; where another program shadows it, put ImageMagick's first: PATH=/usr/bin:$PATH).
# Needs bin/pfl (scripts/build.sh), ImageMagick and chromium-headless-shell (or chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/readme}
img=docs/img
mkdir -p "$img"
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
ls -l "$img"
