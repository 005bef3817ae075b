#!/usr/bin/env python3
"""Runs the production Python OCR pipeline (rapidocr-onnxruntime 1.4.4:
PP-OCRv4 detection, then recognition, no direction classifier) on a
directory of images and times each of its stages; what the `ocr-det` and
`ocr-rec` targets re-implement, to compare their results and timings with.

    .venv/bin/python scripts/lib/ocr_reference.py --images .venv/ocr/images \\
        --out ocr-reference.json [--threads 1] [--warmup 2] [--passes 10]

scripts/setup-onnxruntime installs what it imports into .venv/ and writes the
default images. Every *.png, *.jpg and *.jpeg of --images is read once, in
file-name order, before any timing, as rapidocr's LoadImage reads it (BGR,
uint8), then put through RapidOCR.preprocess and maybe_add_letterbox (which
change nothing for images between 30 and 2000 px a side and no wider than 8
times their height). The engine is RapidOCR() with its default config and
ONNX Runtime sessions of --threads intra-op threads and 1 inter-op thread.

A pass runs every image through the pipeline, timing six stages with
time.perf_counter_ns, each calling rapidocr's own code:

    det_pre    the detector's DetPreProcess (get_preprocess(...)(img))
    det_model  the detector's ONNX Runtime session
    det_post   DBPostProcess, filter_tag_det_res and RapidOCR.sorted_boxes
    rec_pre    the crops (RapidOCR.get_crop_img_list), then the recognizer's
               batching: sorting by aspect ratio, batches of rec_batch_num,
               resize_norm_img at each batch's widest ratio
    rec_model  the recognizer's ONNX Runtime session, once per batch
    rec_post   CTCLabelDecode, and the results put back in box order

The recognizer's loop is TextRecognizer.__call__'s, written out here only to
put timers around its steps; on the first pass the script checks that it
gives exactly what TextDetector.__call__ and TextRecognizer.__call__ give,
and every later pass that it gives what the first did.

--out gets {"onnxruntime", "rapidocr", "threads", "passes", "warmup",
"text_score", "images": [{"file", "width", "height", "boxes" (4 points a
box, in box order, as floats), "texts", "scores"}], "stage_ms": {stage:
{"median", "min"}}, "total_ms": {"median", "min"}}: a stage's figure is its
time in one measured pass summed over all images, in milliseconds, median
and minimum over the passes. The texts and scores are every box's, as the
recognizer returns them; RapidOCR itself drops the results scoring under
text_score (0.5) from what it returns.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

STAGES = ["det_pre", "det_model", "det_post", "rec_pre", "rec_model", "rec_post"]
RAPIDOCR_VERSION = "1.4.4"
EXTENSIONS = (".png", ".jpg", ".jpeg")


def fail(message):
    print(f"ocr_reference.py: {message}", file=sys.stderr)
    sys.exit(1)


def parse_args():
    parser = argparse.ArgumentParser(
        description="Run rapidocr-onnxruntime's PP-OCRv4 pipeline (no direction "
        "classifier) on a directory of images and time each stage."
    )
    parser.add_argument("--images", required=True, help="directory of *.png / *.jpg images")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--threads", type=int, default=1,
                        help="ONNX Runtime intra-op threads (inter-op: 1); default 1")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured passes first; default 2")
    parser.add_argument("--passes", type=int, default=10, help="measured passes; default 10")
    args = parser.parse_args()
    if args.warmup < 0 or args.passes < 1:
        parser.error("--warmup must be 0 or more and --passes 1 or more")
    cpus = os.cpu_count() or 1
    if not 1 <= args.threads <= cpus:
        # rapidocr ignores a thread count outside 1..cpu_count without a word.
        parser.error(f"--threads must be between 1 and the {cpus} CPUs here")
    return args


def build_engine(threads):
    import importlib.metadata

    version = importlib.metadata.version("rapidocr-onnxruntime")
    if version != RAPIDOCR_VERSION:
        fail(f"rapidocr-onnxruntime is {version}, not {RAPIDOCR_VERSION}: run scripts/setup-onnxruntime")
    from rapidocr_onnxruntime import RapidOCR

    # UpdateParameters copies the Global thread counts into Det, Cls and Rec.
    engine = RapidOCR(intra_op_num_threads=threads, inter_op_num_threads=1)
    for name, session in (("det", engine.text_det.infer), ("rec", engine.text_rec.session)):
        options = session.session.get_session_options()
        if (options.intra_op_num_threads, options.inter_op_num_threads) != (threads, 1):
            fail(f"the {name} session has {options.intra_op_num_threads} intra-op and "
                 f"{options.inter_op_num_threads} inter-op threads, not {threads} and 1")
    return engine


def load_images(engine, directory):
    from rapidocr_onnxruntime.utils import LoadImage

    names = sorted(
        name for name in os.listdir(directory)
        if name.lower().endswith(EXTENSIONS) and os.path.isfile(os.path.join(directory, name))
    )
    if not names:
        fail(f"{directory} has no *.png or *.jpg images")
    load = LoadImage()
    images = []
    for name in names:
        raw = load(os.path.join(directory, name))
        raw_h, raw_w = raw.shape[:2]
        # What RapidOCR.__call__ does before detection; untimed.
        img, ratio_h, ratio_w = engine.preprocess(raw)
        op_record = {"preprocess": {"ratio_h": ratio_h, "ratio_w": ratio_w}}
        img, op_record = engine.maybe_add_letterbox(img, op_record)
        images.append({"file": name, "img": img, "raw_h": raw_h, "raw_w": raw_w, "op_record": op_record})
    return images


def run_image(engine, img, times):
    """One image through the pipeline, adding each stage's nanoseconds to
    times; returns (sorted boxes or None, crops, [(text, score)])."""
    import numpy as np

    det = engine.text_det
    rec = engine.text_rec
    clock = time.perf_counter_ns

    # TextDetector.__call__, then RapidOCR.auto_text_det's sorting.
    t0 = clock()
    ori_img_shape = img.shape[0], img.shape[1]
    det.preprocess_op = det.get_preprocess(max(img.shape[0], img.shape[1]))
    prepro_img = det.preprocess_op(img)
    t1 = clock()
    times["det_pre"] += t1 - t0
    if prepro_img is None:
        return None, [], []
    preds = det.infer(prepro_img)[0]
    t2 = clock()
    times["det_model"] += t2 - t1
    dt_boxes, _ = det.postprocess_op(preds, ori_img_shape)
    dt_boxes = det.filter_tag_det_res(dt_boxes, ori_img_shape)
    if dt_boxes is None or len(dt_boxes) < 1:
        times["det_post"] += clock() - t2
        return None, [], []
    dt_boxes = engine.sorted_boxes(dt_boxes)
    t3 = clock()
    times["det_post"] += t3 - t2

    # RapidOCR.get_crop_img_list, then TextRecognizer.__call__ (return_word_box False).
    img_list = engine.get_crop_img_list(img, dt_boxes)
    width_list = [crop.shape[1] / float(crop.shape[0]) for crop in img_list]
    indices = np.argsort(np.array(width_list))
    img_num = len(img_list)
    rec_res = [("", 0.0)] * img_num
    batch_num = rec.rec_batch_num
    t_pre = clock()
    times["rec_pre"] += t_pre - t3
    for beg_img_no in range(0, img_num, batch_num):
        t_pre = clock()
        end_img_no = min(img_num, beg_img_no + batch_num)
        img_c, img_h, img_w = rec.rec_image_shape[:3]
        max_wh_ratio = img_w / img_h
        wh_ratio_list = []
        for ino in range(beg_img_no, end_img_no):
            h, w = img_list[indices[ino]].shape[0:2]
            wh_ratio = w * 1.0 / h
            max_wh_ratio = max(max_wh_ratio, wh_ratio)
            wh_ratio_list.append(wh_ratio)
        norm_img_batch = []
        for ino in range(beg_img_no, end_img_no):
            norm_img = rec.resize_norm_img(img_list[indices[ino]], max_wh_ratio)
            norm_img_batch.append(norm_img[np.newaxis, :])
        norm_img_batch = np.concatenate(norm_img_batch).astype(np.float32)
        t_model = clock()
        preds = rec.session(norm_img_batch)[0]
        t_post = clock()
        rec_result = rec.postprocess_op(
            preds, False, wh_ratio_list=wh_ratio_list, max_wh_ratio=max_wh_ratio
        )
        for rno, one_res in enumerate(rec_result):
            rec_res[indices[beg_img_no + rno]] = one_res
        t_end = clock()
        times["rec_pre"] += t_model - t_pre
        times["rec_model"] += t_post - t_model
        times["rec_post"] += t_end - t_post
    return dt_boxes, img_list, rec_res


def same_boxes(a, b):
    import numpy as np

    if a is None or b is None:
        return a is None and b is None
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def same_results(a, b):
    return len(a) == len(b) and all(
        x[0] == y[0] and float(x[1]) == float(y[1]) for x, y in zip(a, b)
    )


def check_against_rapidocr(engine, image, boxes, crops, rec_res):
    """What rapidocr's own calls give for this image must be what the timed loop gave."""
    own_boxes, _ = engine.auto_text_det(image["img"])
    if not same_boxes(own_boxes, boxes):
        fail(f"{image['file']}: the timed detection gave other boxes than "
             f"TextDetector.__call__ and sorted_boxes:\n{boxes}\n{own_boxes}")
    if boxes is None:
        return
    own_res, _ = engine.text_rec(crops)
    if not same_results(own_res, rec_res):
        fail(f"{image['file']}: the timed recognition gave other results than "
             f"TextRecognizer.__call__:\n{rec_res}\n{own_res}")


def summary(values_ns):
    ms = [v / 1e6 for v in values_ns]
    return {"median": statistics.median(ms), "min": min(ms)}


def main():
    args = parse_args()
    import onnxruntime

    engine = build_engine(args.threads)
    images = load_images(engine, args.images)

    measured = {stage: [] for stage in STAGES}
    first = None
    for pass_no in range(args.warmup + args.passes):
        times = dict.fromkeys(STAGES, 0)
        results = [run_image(engine, image["img"], times) for image in images]
        if first is None:
            for image, (boxes, crops, rec_res) in zip(images, results):
                check_against_rapidocr(engine, image, boxes, crops, rec_res)
            first = results
        else:
            for image, (boxes, _, rec_res), (boxes0, _, rec_res0) in zip(images, results, first):
                if not same_boxes(boxes, boxes0) or not same_results(rec_res, rec_res0):
                    fail(f"{image['file']}: pass {pass_no} gave other results than the first pass")
        if pass_no >= args.warmup:
            for stage in STAGES:
                measured[stage].append(times[stage])

    out_images = []
    for image, (boxes, _, rec_res) in zip(images, first):
        if boxes is None:
            points = []
        else:
            points = engine._get_origin_points(
                boxes, image["op_record"], image["raw_h"], image["raw_w"]
            ).tolist()
        out_images.append({
            "file": image["file"],
            "width": image["raw_w"],
            "height": image["raw_h"],
            "boxes": [[[float(x), float(y)] for x, y in box] for box in points],
            "texts": [text for text, _ in rec_res],
            "scores": [float(score) for _, score in rec_res],
        })
    totals = [sum(measured[stage][i] for stage in STAGES) for i in range(args.passes)]
    report = {
        "onnxruntime": onnxruntime.__version__,
        "rapidocr": RAPIDOCR_VERSION,
        "threads": args.threads,
        "passes": args.passes,
        "warmup": args.warmup,
        "text_score": engine.text_score,
        "images": out_images,
        "stage_ms": {stage: summary(measured[stage]) for stage in STAGES},
        "total_ms": summary(totals),
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)

    boxes = sum(len(image["boxes"]) for image in out_images)
    print(f"rapidocr {RAPIDOCR_VERSION}, onnxruntime {onnxruntime.__version__}, "
          f"{args.threads} thread(s): {len(images)} images, {boxes} boxes; "
          f"{args.warmup} warmup + {args.passes} measured passes")
    print(f"{'stage':<10} {'median ms':>10} {'min ms':>10} {'share':>7}   (per pass, all images)")
    total_median = report["total_ms"]["median"]
    for stage in STAGES:
        s = report["stage_ms"][stage]
        share = 100 * s["median"] / total_median if total_median > 0 else math.nan
        print(f"{stage:<10} {s['median']:>10.2f} {s['min']:>10.2f} {share:>6.1f}%")
    print(f"{'total':<10} {total_median:>10.2f} {report['total_ms']['min']:>10.2f}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
