"""Decodes TensorFlow `Event` protobufs by hand: the payload of every smdebug and TensorBoard record.

Only the fields smdebug and `torch.utils.tensorboard` write are read: Event{wall_time, step,
file_version, summary}, Summary.Value{tag, simple_value, metadata.plugin_data, tensor, histo},
TensorProto{dtype, shape, tensor_content, the typed *_val lists}. No protobuf library is used, so
reading a foreign run needs nothing beyond numpy. DT_INT8 decodes as signed (smdebug's own reader
says uint8, a bug), DT_BFLOAT16 is upcast to float32. Framing lives in `tfrecord.py`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

DT_BFLOAT16 = 14
_DTYPES: dict[int, tuple[str, str]] = {
    # DataType enum value -> (numpy dtype of tensor_content, the dtype name we report)
    1: ("<f4", "float32"),
    2: ("<f8", "float64"),
    3: ("<i4", "int32"),
    4: ("u1", "uint8"),
    5: ("<i2", "int16"),
    6: ("i1", "int8"),
    9: ("<i8", "int64"),
    10: ("?", "bool"),
    17: ("<u2", "uint16"),
    19: ("<f2", "float16"),
    22: ("<u4", "uint32"),
    23: ("<u8", "uint64"),
    DT_BFLOAT16: ("<u2", "bfloat16"),
}
_VARINT_LISTS = (7, 10, 11, 13, 16, 17)
"""TensorProto fields int_val, int64_val, bool_val, half_val, uint32_val, uint64_val: varint lists."""
_NAMES = {7: "string", 8: "complex64", 18: "complex128", 20: "resource", 21: "variant"}


_MAX_FILL_ELEMENTS = 1 << 24
"""A constant-filled tensor is expanded up to this many elements; a larger claim is treated as damage."""


class DecodeError(ValueError):
    """A payload is not a well-formed protobuf message of the expected kind."""


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")


def fields(data: bytes | memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """Yield (field number, wire type, value) of one message: an int for varints, bytes otherwise."""
    buf = memoryview(data).cast("B")
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | memoryview
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + length], pos + length
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise DecodeError(f"unsupported wire type {wire} in field {number}")
        if pos > len(buf):
            raise DecodeError(f"field {number} runs past the end of the message")
        yield number, wire, value


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _bytes(v: int | memoryview) -> memoryview:
    if isinstance(v, int):
        raise DecodeError("expected a length-delimited field, found a varint")
    return v


def _repeated(values: list[float | int], wire: int, v: int | memoryview, fmt: str) -> None:
    """Append one field of a repeated numeric list, packed (wire type 2) or not."""
    if wire == 2:
        raw = _bytes(v)
        if fmt == "varint":
            pos = 0
            while pos < len(raw):
                x, pos = _varint(raw, pos)
                values.append(_signed64(x))
        else:
            values.extend(x for (x,) in struct.iter_unpack(fmt, raw))
    elif isinstance(v, int):
        values.append(_signed64(v))
    else:
        values.append(struct.unpack(fmt, v)[0])


@dataclass
class Tensor:
    """A decoded TensorProto: values as numpy (bfloat16 upcast), plus the dtype name it was stored in."""

    dtype: str
    shape: tuple[int, ...]
    values: np.ndarray | None
    """None for strings and other non-numeric dtypes (`dtype` names them)."""


def _shape(data: memoryview) -> tuple[int, ...]:
    dims = []
    for number, _w, v in fields(data):
        if number == 2:
            size = 0
            for n2, _w2, v2 in fields(_bytes(v)):
                if n2 == 1 and isinstance(v2, int):
                    size = _signed64(v2)
            dims.append(size)
    return tuple(dims)


def decode_tensor(data: bytes | memoryview) -> Tensor:
    """Decode a TensorProto, from `tensor_content` or from the typed value lists."""
    dtype_enum = 0
    shape: tuple[int, ...] = ()
    content: memoryview | None = None
    listed: list[float | int] = []
    for number, wire, v in fields(data):
        if number == 1 and isinstance(v, int):
            dtype_enum = v
        elif number == 2:
            shape = _shape(_bytes(v))
        elif number == 4:
            content = _bytes(v)
        elif number == 5:  # float_val
            _repeated(listed, wire, v, "<f")
        elif number == 6:  # double_val
            _repeated(listed, wire, v, "<d")
        elif number in _VARINT_LISTS:
            _repeated(listed, wire, v, "varint")
    if dtype_enum not in _DTYPES:
        return Tensor(dtype=_NAMES.get(dtype_enum, f"DT_{dtype_enum}"), shape=shape, values=None)
    np_dtype, name = _DTYPES[dtype_enum]
    count = int(np.prod(shape)) if shape else 1
    try:
        if content is not None:
            arr = np.frombuffer(content, dtype=np_dtype)
        elif dtype_enum in (19, DT_BFLOAT16):
            # half_val holds the 16-bit patterns in int32 varints.
            arr = np.asarray([int(x) & 0xFFFF for x in listed], np.uint16).view(np_dtype)
        else:
            arr = np.asarray(listed).astype(np_dtype)
    except (ValueError, OverflowError) as err:
        raise DecodeError(f"tensor of dtype {name} cannot be decoded ({err})") from err
    if arr.size == 1 and 1 < count <= _MAX_FILL_ELEMENTS:
        arr = np.repeat(arr, count)  # TensorFlow stores a constant-filled tensor as one listed value
    if arr.size != count:
        raise DecodeError(f"tensor of shape {list(shape)} holds {arr.size} values, expected {count}")
    if dtype_enum == DT_BFLOAT16:
        arr = (arr.astype(np.uint32) << 16).view(np.float32)
    return Tensor(dtype=name, shape=shape, values=arr.reshape(shape))


@dataclass
class Value:
    """One Summary.Value: a tag and exactly one of a scalar, a tensor, or something we do not read."""

    tag: str
    simple_value: float | None = None
    tensor: Tensor | None = None
    plugins: dict[str, bytes] = field(default_factory=dict)
    """plugin_name -> content of the SummaryMetadata (smdebug: `mode`, `mode_step`; TensorBoard: `scalars`)."""
    kind: str = "tensor"
    """simple_value, tensor, histogram, image, audio, or empty."""


@dataclass
class Event:
    """One Event record: time, step, and either the file version or the summary values."""

    wall_time: float = 0.0
    step: int = 0
    file_version: str | None = None
    values: list[Value] = field(default_factory=list)


def _plugins(data: memoryview) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for number, _w, v in fields(data):
        if number == 1:  # plugin_data (repeated in smdebug's proto copy, single in TensorFlow's)
            name, content = "", b""
            for n2, _w2, v2 in fields(_bytes(v)):
                if n2 == 1:
                    name = bytes(_bytes(v2)).decode("utf-8", "replace")
                elif n2 == 2:
                    content = bytes(_bytes(v2))
            out[name] = content
    return out


def _value(data: memoryview, *, decode_tensors: bool) -> Value:
    val = Value(tag="", kind="empty")
    for number, _w, v in fields(data):
        if number == 1:
            val.tag = bytes(_bytes(v)).decode("utf-8", "replace")
        elif number == 2 and not isinstance(v, int):
            val.simple_value = struct.unpack("<f", v)[0]
            val.kind = "simple_value"
        elif number == 9:
            val.plugins = _plugins(_bytes(v))
        elif number == 8:
            val.kind = "tensor"
            if decode_tensors:
                val.tensor = decode_tensor(_bytes(v))
        elif number in (3, 5):
            val.kind = "histogram"
        elif number == 4:
            val.kind = "image"
        elif number == 6:
            val.kind = "audio"
    return val


def decode_event(data: bytes | memoryview, *, decode_tensors: bool = True) -> Event:
    """Decode an Event; raise DecodeError on malformed bytes."""
    ev = Event()
    try:
        for number, _w, v in fields(data):
            if number == 1 and not isinstance(v, int):
                ev.wall_time = struct.unpack("<d", v)[0]
            elif number == 2 and isinstance(v, int):
                ev.step = _signed64(v)
            elif number == 3:
                ev.file_version = bytes(_bytes(v)).decode("utf-8", "replace")
            elif number == 5:
                for n2, _w2, v2 in fields(_bytes(v)):
                    if n2 == 1:
                        ev.values.append(_value(_bytes(v2), decode_tensors=decode_tensors))
    except (struct.error, UnicodeDecodeError) as err:
        raise DecodeError(f"malformed event ({err})") from err
    return ev
