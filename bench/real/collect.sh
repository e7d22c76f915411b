#!/usr/bin/env bash
# What the device call hands back: the campaign's folder as one archive (overwritten each time), and the logs.
mkdir -p "$OUT"
cp /tmp/go.log /tmp/make_more.log "$OUT/" 2>/dev/null
[ -d /tmp/out ] && tar czf "$OUT/results.tgz.part" -C /tmp out && mv "$OUT/results.tgz.part" "$OUT/results.tgz"
cat /tmp/out/progress.txt 2>/dev/null
