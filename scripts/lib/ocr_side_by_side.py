#!/usr/bin/env python3
"""Per-stage times of the OCR pipeline, Rust against Python, on the same
images with the same ONNX Runtime and threads: the manifests of an `ocr-det`
and an `ocr-rec` run of profile-cli beside the JSON of ocr_reference.py.

    .venv/bin/python scripts/lib/ocr_side_by_side.py \\
        --python reference.json --det DET_MANIFEST --rec REC_MANIFEST [--markdown]

A stage's figure is its median time in one pass over all the images, in
milliseconds: for the Python side, the median over its passes of the stage's
total; for the Rust side, the median per measured pass (`inclusive_per_pass`)
of the ranges the stage is made of. scripts/ocr-side-by-side runs all three.
"""

import argparse
import json
import sys

import yaml

# (stage, the Rust target, its ranges (paths) making up the stage)
STAGES = [
    ("det_pre", "det", ["resize", "normalize"]),
    ("det_model", "det", ["model"]),
    ("det_post", "det", ["postprocess"]),
    ("rec_pre", "rec", ["crop", "resize"]),
    ("rec_model", "rec", ["model"]),
    ("rec_post", "rec", ["decode"]),
]


def per_pass_ms(manifest, path):
    for entry in manifest.get("timings", {}).get("range_tree", []):
        if entry.get("path") == path:
            stats = entry.get("inclusive_per_pass") or {}
            return stats.get("p50_ns", 0) / 1e6
    sys.exit(f"ocr_side_by_side.py: no range `{path}` in the manifest of {manifest.get('profile_name')}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True)
    parser.add_argument("--det", required=True, help="manifest.yaml of the ocr-det run")
    parser.add_argument("--rec", required=True, help="manifest.yaml of the ocr-rec run")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    with open(args.python) as f:
        python = json.load(f)
    manifests = {}
    for key, path in (("det", args.det), ("rec", args.rec)):
        with open(path) as f:
            manifests[key] = yaml.safe_load(f)
    rows = []
    for stage, target, paths in STAGES:
        theirs = python["stage_ms"][stage]["median"]
        ours = sum(per_pass_ms(manifests[target], p) for p in paths)
        rows.append((stage, theirs, ours, theirs / ours if ours else float("inf")))
    header = ("stage", "Python (ms/pass)", "Rust (ms/pass)", "Python / Rust")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|---:|---:|---:|")
        for stage, theirs, ours, ratio in rows:
            print(f"| {stage} | {theirs:.1f} | {ours:.1f} | {ratio:.2f} |")
    else:
        print(f"{header[0]:<10} {header[1]:>17} {header[2]:>15} {header[3]:>14}")
        for stage, theirs, ours, ratio in rows:
            print(f"{stage:<10} {theirs:>17.1f} {ours:>15.1f} {ratio:>14.2f}")
    print(
        f"onnxruntime {python['onnxruntime']}, {python['threads']} thread(s), "
        f"{len(python['images'])} images; Python: median of {python['passes']} passes, "
        f"Rust: median of {manifests['det']['timings']['iterations']['count']} passes"
    )


if __name__ == "__main__":
    main()
