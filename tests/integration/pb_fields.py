"""The protobuf wire format as the integration scripts read it, without protobuf or TensorFlow: varints
and the (field number, wire type, value) triples of a message. Used by event_tags.py (TensorBoard event
files) and tfslim_layout.py (tf.train.Example records)."""


def read_varint(b, p):
    """The varint at b[p:]: (value, position after it)."""
    v = shift = 0
    while True:
        x = b[p]
        p += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if x < 0x80:
            return v, p


def fields(b):
    """(number, wire type, value) of each field of message b: value is an int for wire type 0 (varint),
    bytes for 1 (8 bytes), 2 (length-delimited) and 5 (4 bytes). Other wire types raise ValueError."""
    p = 0
    while p < len(b):
        key, p = read_varint(b, p)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, p = read_varint(b, p)
        elif wire == 1:
            v, p = b[p:p + 8], p + 8
        elif wire == 2:
            n, p = read_varint(b, p)
            v, p = b[p:p + n], p + n
        elif wire == 5:
            v, p = b[p:p + 4], p + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield num, wire, v
