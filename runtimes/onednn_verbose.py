"""Reading oneDNN's ONEDNN_VERBOSE lines: which primitives ran, and the direction of each layout
change (reorder). Standard library only."""
import re


def verbose_body(line):
    """The fields of an ONEDNN_VERBOSE line after its marker, without what some oneDNN versions
    put before the operation (a timestamp, a format version such as "v1", the record type
    "primitive"); None for any other line."""
    fields = line.split(",")
    if fields[0] not in ("onednn_verbose", "dnnl_verbose"):
        return None
    rest = fields[1:]
    while rest and (re.fullmatch(r"[\d.]+|v\d+", rest[0]) or rest[0] == "primitive"):
        rest = rest[1:]
    return rest


def exec_fields(line):
    """The fields of the line of an executed primitive in oneDNN 2.x's order (marker in [0],
    "exec" in [1], engine in [2], primitive kind in [3], implementation in [4], propagation in
    [5], memory descriptors in [6]), else None."""
    rest = verbose_body(line)
    if rest and len(rest) > 3 and rest[0] == "exec":
        return [line.split(",", 1)[0]] + rest
    return None


def reorder_directions(lines):
    """(to plain, to blocked): the reorders among `lines`, by direction. A reorder from a
    channel-blocked source (aBcd16b, aBcd8b, ...) changes to plain; one from a plain source (to a
    blocked layout, or a plain copy on the way into one) changes to blocked."""
    to_plain = to_blocked = 0
    for line in lines:
        fields = exec_fields(line)
        if not fields or len(fields) < 7 or fields[3] != "reorder":
            continue
        # The source: src_f32::blocked:aBcd16b:f0 (oneDNN 2.x), src:f32::blocked:aBcd16b::f0 (3.x).
        src = next((f for f in fields[6].split() if f.startswith(("src_", "src:"))), "")
        if re.search(r":blocked:a[A-Z][a-z]*\d+[a-z]", src):
            to_plain += 1
        else:
            to_blocked += 1
    return to_plain, to_blocked
