#!/usr/bin/env python3
"""photo_tree.py PHOTOS_DIR OUT SPEC...: a folder tree of real photographs for the image-folder tests.

Each SPEC is PATH:N (PATH relative to OUT, e.g. train/daisy:12 or roses:5): N JPEGs PATH/000.jpg ...,
each a different crop of one of the photographs in PHOTOS_DIR (china.jpg, flower.jpg; class folders
take them in turn by the order of the specs), mirrored on odd indices, scaled to 64x48.
A SPEC of PATH=bmp or PATH=webp writes one such crop in that format under that name (what an
image-folder conversion must name as ignored); webp is skipped when PIL was built without it.
Exit status 77 when PIL or the photographs are missing (the caller skips)."""
import os
import sys

try:
    from PIL import Image, ImageOps
except ImportError:
    sys.exit(77)

photos_dir, out, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
names = ("china.jpg", "flower.jpg")
if not all(os.path.isfile(os.path.join(photos_dir, n)) for n in names):
    print(f"no photographs {names} in {photos_dir}")
    sys.exit(77)
Image.init()
photos = [Image.open(os.path.join(photos_dir, n)).convert("RGB") for n in names]


def crop(photo, i):
    w, h = photo.size
    cw, ch = w // 2 + (i * 37) % (w // 3), h // 2 + (i * 23) % (h // 3)
    x, y = (i * 53) % (w - cw), (i * 29) % (h - ch)
    img = photo.crop((x, y, x + cw, y + ch)).resize((64, 48))
    return ImageOps.mirror(img) if i % 2 else img


seed = 0
for n, spec in enumerate(specs):
    if "=" in spec:
        path, fmt = spec.split("=")
        if fmt == "webp" and "WEBP" not in Image.SAVE:
            continue
        os.makedirs(os.path.dirname(os.path.join(out, path)) or out, exist_ok=True)
        crop(photos[0], 99).save(os.path.join(out, path), fmt.upper())
        continue
    path, count = spec.rsplit(":", 1)
    folder = os.path.join(out, path)
    os.makedirs(folder, exist_ok=True)
    photo = photos[n % 2]
    for i in range(int(count)):
        seed += 1
        crop(photo, seed).save(os.path.join(folder, "%03d.jpg" % i), "JPEG", quality=85)
