#!/usr/bin/env python3
"""Writes the default image set of the `ocr-det` and `ocr-rec` targets.

    ocr_images.py OUT_DIR LABELS_JSON     write text-00.png .. text-07.png and the labels
    ocr_images.py --check OUT_DIR LABELS_JSON
                                          exit 0 when LABELS_JSON was written by this
                                          version of the generator and every image it
                                          lists is in OUT_DIR; 1 otherwise
    ocr_images.py --version               print the generator's version

Eight 640x480 RGB PNG images, each with 3 to 5 horizontal lines of dark text
on a light background, drawn with Pillow's built-in scalable font
(ImageFont.load_default(size=...), Pillow 10.1 or newer). Everything comes
from a fixed seed and a fixed vocabulary: the same Pillow and FreeType give
the same pixels on any machine, on any day.

LABELS_JSON holds, per image, every line's text and its pixel bounding box
(the union of its words' boxes as Pillow's textbbox gives them; the words
are drawn one by one, with a blank of WORD_SPACE times the font size between
them, wider than the font's own space):

    {"generator": 1, "pillow": "...", "images": [{"file": "text-00.png",
     "width": 640, "height": 480,
     "lines": [{"text": "Invoice 2041", "box": [x0, y0, x1, y1]}, ...]}, ...]}

Bump GENERATOR when the output changes, so that scripts/setup-onnxruntime
writes the set again.
"""

import json
import os
import random
import sys

GENERATOR = 1
SEED = 20240611
COUNT = 8
WIDTH, HEIGHT = 640, 480
MIN_SIZE, MAX_SIZE = 22, 40
# Blank pixels between one line's box and the next one's, and around the page.
MIN_GAP, MAX_GAP = 28, 70
MARGIN = 20
# The blank between two words, in font sizes: the font's own space (a fifth
# of its size) is narrower than the recognizer reads as a space.
WORD_SPACE = 0.45

# Latin letters, digits and simple punctuation only: what the recognizer's
# dictionary certainly holds.
VOCABULARY = [
    "Invoice 2041",
    "Total: 318.50",
    "profile snippet",
    "NMS threshold 0.45",
    "Order #5521",
    "latency 12.8 ms",
    "warmup passes: 3",
    "batch size 16",
    "Net weight 2.5 kg",
    "Ship to: Berlin",
    "Due 2024-03-15",
    "Ref. A-1093",
    "page 3 of 12",
    "median 4.21 ms",
    "score 0.87",
    "Room 214",
    "call 555-0142",
    "Serial KX-4471",
    "Tax 8.25%",
    "Subtotal 294.25",
    "Thank you!",
    "input 640x480",
    "memory 3.2 GB",
    "box count 9",
    "Quality check",
    "Station North",
    "Gate B12",
    "Model PP-OCRv4",
    "green apple",
    "Delivery window",
    "Hello World",
    "Paid in full",
]


def fail(message):
    print(f"ocr_images.py: {message}", file=sys.stderr)
    sys.exit(1)


def load_pillow():
    try:
        import PIL
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        fail("Pillow is not installed: run scripts/setup-onnxruntime")
    version = tuple(int(part) for part in PIL.__version__.split(".")[:2] if part.isdigit())
    if version < (10, 1):
        fail(f"Pillow {PIL.__version__} is too old: the scalable built-in font "
             "(ImageFont.load_default(size=...)) needs Pillow 10.1 or newer")
    font = ImageFont.load_default(size=MIN_SIZE)
    if not isinstance(font, ImageFont.FreeTypeFont):
        fail(f"Pillow {PIL.__version__} was built without FreeType, so "
             "ImageFont.load_default(size=...) has no scalable font")
    return PIL.__version__, Image, ImageDraw, ImageFont


def text_box(draw, origin, text, font, fill=None):
    """Draws text at origin word by word, WORD_SPACE font sizes apart, when
    fill is given; returns the union of the words' textbbox boxes."""
    x, y = origin
    gap = round(WORD_SPACE * font.size)
    box = None
    for word in text.split(" "):
        x0, y0, x1, y1 = draw.textbbox((x, y), word, font=font)
        if fill is not None:
            draw.text((x, y), word, fill=fill, font=font)
        box = (x0, y0, x1, y1) if box is None else (
            min(box[0], x0), min(box[1], y0), max(box[2], x1), max(box[3], y1))
        x += round(draw.textlength(word, font=font)) + gap
    return box


def line_text(rng, draw, font, x_room):
    """One or two phrases that fit in x_room pixels."""
    for _ in range(50):
        words = rng.sample(VOCABULARY, rng.choice([1, 1, 2]))
        text = " ".join(words)
        x0, _, x1, _ = text_box(draw, (0, 0), text, font)
        if x1 - x0 <= x_room:
            return text
    return rng.choice(VOCABULARY)


def layout(rng, draw, ImageFont):
    """Lines of one image: (text, font, (x, y)) with every box inside the page
    and at least MIN_GAP pixels between boxes; tried until one fits."""
    base = rng.randint(MIN_SIZE + 2, MAX_SIZE - 2)
    while True:
        count = rng.randint(3, 5)
        lines = []
        y = rng.randint(MARGIN + 10, 70)
        for _ in range(count):
            size = min(MAX_SIZE, max(MIN_SIZE, base + rng.randint(-2, 2)))
            font = ImageFont.load_default(size=size)
            text = line_text(rng, draw, font, WIDTH - 2 * MARGIN - 100)
            x0, y0, x1, y1 = text_box(draw, (0, 0), text, font)
            x = rng.randint(MARGIN, min(140, WIDTH - MARGIN - x1))
            # Place the line so that its box's top is at y.
            lines.append((text, font, (x, y - y0)))
            y += (y1 - y0) + rng.randint(MIN_GAP, MAX_GAP)
        boxes = [text_box(draw, origin, text, font) for text, font, origin in lines]
        if boxes[-1][3] <= HEIGHT - MARGIN and all(
            MARGIN <= b[0] and b[2] <= WIDTH - MARGIN and MARGIN <= b[1] for b in boxes
        ):
            return lines, boxes


def generate(out_dir, labels_path):
    pillow_version, Image, ImageDraw, ImageFont = load_pillow()
    rng = random.Random(SEED)
    os.makedirs(out_dir, exist_ok=True)
    images = []
    for index in range(COUNT):
        shade = rng.randint(218, 250)
        background = tuple(min(255, shade + rng.randint(-6, 5)) for _ in range(3))
        ink = rng.randint(10, 70)
        color = tuple(max(0, ink + rng.randint(-10, 10)) for _ in range(3))
        image = Image.new("RGB", (WIDTH, HEIGHT), background)
        draw = ImageDraw.Draw(image)
        lines, boxes = layout(rng, draw, ImageFont)
        for (text, font, origin), box in zip(lines, boxes):
            text_box(draw, origin, text, font, fill=color)
        for above, below in zip(boxes, boxes[1:]):
            assert below[1] - above[3] >= MIN_GAP, (index, above, below)
        name = f"text-{index:02d}.png"
        image.save(os.path.join(out_dir, name), format="PNG")
        images.append({
            "file": name,
            "width": WIDTH,
            "height": HEIGHT,
            "lines": [
                {"text": text, "box": [int(v) for v in box]}
                for (text, _, _), box in zip(lines, boxes)
            ],
        })
    labels = {"generator": GENERATOR, "pillow": pillow_version, "images": images}
    tmp = labels_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(format_labels(labels))
    os.replace(tmp, labels_path)


def format_labels(labels):
    """JSON with one line of the file per text line."""
    head = {key: value for key, value in labels.items() if key != "images"}
    out = [json.dumps(head)[:-1] + ', "images": [']
    for i, image in enumerate(labels["images"]):
        fields = {key: value for key, value in image.items() if key != "lines"}
        out.append("  " + json.dumps(fields)[:-1] + ', "lines": [')
        lines = [json.dumps(line) for line in image["lines"]]
        out.extend("    " + line + ("," if j + 1 < len(lines) else "") for j, line in enumerate(lines))
        out.append("  ]}" + ("," if i + 1 < len(labels["images"]) else ""))
    out.append("]}")
    text = "\n".join(out) + "\n"
    assert json.loads(text) == labels
    return text


def up_to_date(out_dir, labels_path):
    try:
        with open(labels_path) as f:
            labels = json.load(f)
        return labels.get("generator") == GENERATOR and len(labels["images"]) == COUNT and all(
            os.path.isfile(os.path.join(out_dir, image["file"])) for image in labels["images"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def main(argv):
    if argv == ["--version"]:
        print(GENERATOR)
        return 0
    if len(argv) == 3 and argv[0] == "--check":
        return 0 if up_to_date(argv[1], argv[2]) else 1
    if len(argv) == 2 and not argv[0].startswith("-"):
        generate(argv[0], argv[1])
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
