#!/usr/bin/python3
"""Prints "width height distinct_colours non_white_fraction" of an 8-bit RGB/RGBA PNG; with a
column X as second argument, also the non-white fraction of the pixels at X and right of it.

Standard library only (zlib), so the report test needs nothing but Python to check that a
screenshot is not blank.
"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise SystemExit(f"{path}: unsupported PNG (depth {depth}, colour type {ctype}, interlace {interlace})")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    width, height, bpp, rows = decode(sys.argv[1])
    right_of = int(sys.argv[2]) if len(sys.argv) > 2 else None
    colours = set()
    non_white = 0
    non_white_right = 0
    for line in rows:
        for x in range(0, len(line), bpp):
            px = line[x:x + 3]
            colours.add(px)
            if px != b"\xff\xff\xff":
                non_white += 1
                if right_of is not None and x // bpp >= right_of:
                    non_white_right += 1
    figures = [width, height, len(colours), non_white / float(width * height)]
    if right_of is not None:
        figures.append(non_white_right / float(max(1, width - right_of) * height))
    print(*figures)


if __name__ == "__main__":
    main()
