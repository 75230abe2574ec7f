#!/usr/bin/env python3
"""Writes the seed files of the fuzz corpora (fuzz/corpus/<target>/),
with the standard library only (no numpy): .npy files of every supported
dtype, byte order, memory order and format version; .npz archives as
`numpy.savez` writes them (stored entries, ZIP64 local headers) and plain
ones; safetensors files of several dtypes, with and without metadata. The
reference files of tests/reference/ and the entries of its .npz archives are
copied in too. Run from the repository root: python3 fuzz/make_seeds.py
"""
import io
import json
import os
import struct
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REF = os.path.join(ROOT, "tests", "reference")
OUT = os.path.join(ROOT, "fuzz", "corpus")


def npy(descr, shape, data, fortran=False, version=1, extra=""):
    shape_text = "(%s)" % ("".join("%d," % d for d in shape) if len(shape) == 1 else ", ".join(map(str, shape)))
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, %s}" % (
        descr, "True" if fortran else "False", shape_text, extra)
    before = 10 if version == 1 else 12
    total = -(-(before + len(header) + 1) // 64) * 64
    header = header + " " * (total - before - len(header) - 1) + "\n"
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode("latin1") + data


def write(target, name, data):
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    with open(os.path.join(OUT, target, name), "wb") as f:
        f.write(data)


def npys():
    out = {
        "f4.npy": npy("<f4", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, 6)),
        "f8_be.npy": npy(">f8", (2,), struct.pack(">2d", 1.5, -2.5)),
        "f2.npy": npy("<f2", (3,), struct.pack("<3H", 0x3C00, 0x7C00, 0x0001)),
        "i1.npy": npy("|i1", (4,), struct.pack("<4b", -1, 0, 1, 127)),
        "u1.npy": npy("|u1", (2, 2), bytes([0, 1, 2, 255])),
        "i2.npy": npy("<i2", (2,), struct.pack("<2h", -3, 3)),
        "u2.npy": npy("<u2", (1,), struct.pack("<H", 65535)),
        "i4_f.npy": npy("<i4", (2, 2), struct.pack("<4i", 1, 2, 3, 4), fortran=True),
        "u4.npy": npy("<u4", (1,), struct.pack("<I", 2**32 - 1)),
        "i8.npy": npy("<i8", (), struct.pack("<q", -7)),
        "b1.npy": npy("|b1", (3,), bytes([1, 0, 1])),
        "empty.npy": npy("<f4", (0, 5), b""),
        "v2.npy": npy("<f4", (1,), struct.pack("<f", 9), version=2),
        "v3.npy": npy("<f8", (1, 1), struct.pack("<d", 9), version=3),
        "dup.npy": npy("<f4", (3,), struct.pack("<2f", 1, 2), extra="'shape': (2,), "),
    }
    for name, data in out.items():
        write("npy", name, data)
    return out


def savez(entries, zip64=False):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            with z.open(name, "w", force_zip64=zip64) as f:
                f.write(data)
    return buf.getvalue()


def npzs(arrays):
    items = sorted(arrays.items())
    write("npz", "savez.npz", savez([(n, d) for n, d in items[:4]], zip64=True))
    write("npz", "plain.npz", savez([(n, d) for n, d in items[4:8]]))
    write("npz", "one.npz", savez([("w.npy", items[0][1])]))
    write("npz", "empty.npz", savez([]))
    write("npz", "bare_name.npz", savez([("w", items[1][1])]))


def st(tensors, metadata=None):
    header = {}
    data = b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors():
    write("safetensors", "f32.safetensors", st({"w": ("F32", (2, 2), struct.pack("<4f", 1, 2, 3, 4))}, {"format": "pt"}))
    write("safetensors", "mixed.safetensors", st({
        "a": ("F16", (2,), struct.pack("<2H", 0x3C00, 0xFC00)),
        "b": ("BF16", (1,), struct.pack("<H", 0x3F80)),
        "c": ("I8", (3,), struct.pack("<3b", -1, 0, 1)),
        "d": ("BOOL", (2,), bytes([0, 1])),
        "e": ("U32", (1,), struct.pack("<I", 7)),
        "f": ("F64", (), struct.pack("<d", 2.5)),
        "g": ("I64", (0,), b""),
    }))
    write("safetensors", "empty.safetensors", st({}))
    write("safetensors", "meta_only.safetensors", st({}, {"format": "pt", "note": "x"}))


def main():
    arrays = {}
    for name in sorted(os.listdir(REF)):
        path = os.path.join(REF, name)
        if name.endswith(".npz"):
            write("npz", name, open(path, "rb").read())
            with zipfile.ZipFile(path) as z:
                for info in z.infolist():
                    if info.compress_type == zipfile.ZIP_STORED:
                        arrays["%s_%s" % (name[:-4], info.filename)] = z.read(info)
        elif name.endswith(".safetensors"):
            write("safetensors", name, open(path, "rb").read())
    for name, data in arrays.items():
        write("npy", name, data)
    arrays.update(npys())
    npzs(arrays)
    safetensors()


if __name__ == "__main__":
    main()
