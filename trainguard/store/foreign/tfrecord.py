"""TFRecord framing and CRC-32C, without TensorFlow: what smdebug and TensorBoard event files are made of.

A record is `uint64 length` (little-endian), `uint32 masked_crc32c(length bytes)`, the payload, and a
`uint32` footer. TensorFlow and TensorBoard put the masked CRC-32C of the payload in the footer;
smdebug's debug writers put the constant `masked_crc32c(b"0x12345678")` there instead
(shared/research/smdebug.md §1.2). Both footers are accepted here; the length CRC is always checked.
Used by `smdebug.py` and `tensorboard.py`; the protobuf messages inside live in `tfevent.py`.
CRC-32C here is pure Python (about 10 MB/s); a constant smdebug footer needs no payload CRC at all.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

HEADER_BYTES = 12
FOOTER_BYTES = 4
FRAME_BYTES = HEADER_BYTES + FOOTER_BYTES
SMDEBUG_MAGIC = b"0x12345678"
"""smdebug's `CHECKSUM_MAGIC_BYTES`: its debug writers store the masked CRC of these bytes as every footer."""

_CASTAGNOLI_REFLECTED = 0x82F63B78
_MASK_DELTA = 0xA282EAD8


def _tables() -> list[list[int]]:
    """Slicing-by-8 tables for CRC-32C: table[k][b] is the CRC of byte b followed by k zero bytes."""
    t0 = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ _CASTAGNOLI_REFLECTED if c & 1 else c >> 1
        t0.append(c)
    tables = [t0]
    for _ in range(7):
        prev = tables[-1]
        tables.append([(prev[b] >> 8) ^ t0[prev[b] & 0xFF] for b in range(256)])
    return tables


_T = _tables()


def crc32c(data: bytes | memoryview) -> int:
    """Return the CRC-32C (Castagnoli) of `data`, as TensorFlow computes it."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _T
    crc = 0xFFFFFFFF
    mv = memoryview(data).cast("B")
    n8 = len(mv) // 8 * 8
    # Eight bytes per iteration: about 8x fewer Python operations than a byte loop.
    for (word,) in struct.iter_unpack("<Q", mv[:n8]):
        x = word ^ crc
        crc = (
            t7[x & 0xFF]
            ^ t6[(x >> 8) & 0xFF]
            ^ t5[(x >> 16) & 0xFF]
            ^ t4[(x >> 24) & 0xFF]
            ^ t3[(x >> 32) & 0xFF]
            ^ t2[(x >> 40) & 0xFF]
            ^ t1[(x >> 48) & 0xFF]
            ^ t0[x >> 56]
        )
    for b in mv[n8:]:
        crc = (crc >> 8) ^ t0[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes | memoryview) -> int:
    """Return TensorFlow's masked CRC-32C: rotate right by 15 bits, add a constant (mod 2^32)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


SMDEBUG_FOOTER = masked_crc32c(SMDEBUG_MAGIC)


class RecordError(ValueError):
    """A record is truncated or damaged.

    `truncated` is True when the bytes simply end early (a growing file may still complete it).
    `next_offset` is where the next record starts when only the payload is bad (the length was
    intact, so the caller can skip this record), and None when the length cannot be trusted.
    """

    def __init__(self, message: str, *, truncated: bool = False, next_offset: int | None = None) -> None:
        super().__init__(message)
        self.truncated = truncated
        self.next_offset = next_offset


@dataclass(frozen=True)
class Record:
    """One framed record: where it starts, its payload, and which footer it carried."""

    offset: int
    payload: memoryview
    footer: str
    """`crc` (a real payload CRC, TensorFlow/TensorBoard) or `smdebug` (the constant footer)."""

    @property
    def end(self) -> int:
        return self.offset + FRAME_BYTES + len(self.payload)


def frame(payload: bytes, *, smdebug_footer: bool = False) -> bytes:
    """Return `payload` framed as one record, with a real payload CRC or smdebug's constant footer."""
    header = struct.pack("<Q", len(payload))
    footer = SMDEBUG_FOOTER if smdebug_footer else masked_crc32c(payload)
    return header + struct.pack("<I", masked_crc32c(header)) + payload + struct.pack("<I", footer)


def read_record(data: bytes | memoryview, offset: int = 0) -> Record:
    """Decode the record at `offset` of `data`; raise RecordError when it is truncated or damaged.

    The length CRC must match. The footer may be smdebug's constant (the payload is then taken as
    it is: smdebug gives nothing to check it against) or the payload's CRC, which is verified.
    """
    mv = memoryview(data)
    if len(mv) - offset < HEADER_BYTES:
        raise RecordError(f"truncated record header at byte {offset}", truncated=True)
    header = mv[offset : offset + 8]
    (length,) = struct.unpack_from("<Q", mv, offset)
    (length_crc,) = struct.unpack_from("<I", mv, offset + 8)
    if masked_crc32c(header) != length_crc:
        raise RecordError(f"record at byte {offset}: the length CRC does not match (damaged length)")
    end = offset + HEADER_BYTES + length
    if len(mv) < end + FOOTER_BYTES:
        raise RecordError(
            f"record at byte {offset}: {length} payload bytes announced, only {max(0, len(mv) - offset - HEADER_BYTES)} present",
            truncated=True,
        )
    payload = mv[offset + HEADER_BYTES : end]
    (footer,) = struct.unpack_from("<I", mv, end)
    if footer == SMDEBUG_FOOTER:
        kind = "smdebug"
    elif footer == masked_crc32c(payload):
        kind = "crc"
    else:
        raise RecordError(
            f"record at byte {offset}: the payload CRC does not match and the footer is not smdebug's constant",
            next_offset=end + FOOTER_BYTES,
        )
    return Record(offset=offset, payload=payload, footer=kind)


def iter_records(data: bytes | memoryview, offset: int = 0) -> Iterator[Record]:
    """Yield the records of a whole file from `offset`; raise RecordError at the first damaged one."""
    mv = memoryview(data)
    while offset < len(mv):
        rec = read_record(mv, offset)
        yield rec
        offset = rec.end
