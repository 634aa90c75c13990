"""The mask and sentinel symbols every family's dictionary uses: the dictionary's own ``[MASK]``
or an appended ``<mask>`` (:func:`find_mask`, :func:`add_mask`), and ``<sentinel_i>`` appended
after the data's symbols (:func:`add_sentinels`). Appended symbols come last, so a model loads
into a task without them by dropping trailing rows.
"""

#: fairseq's mask symbol (BART, RoBERTa), appended when a dictionary has no mask symbol.
MASK = "<mask>"
#: BERT's mask symbol, used when a dictionary holds it.
BERT_MASK = "[MASK]"
#: The mask symbols a dictionary may hold, in the order they are preferred.
MASK_SYMBOLS = (BERT_MASK, MASK)
#: Sentinel ``i`` of T5 span corruption.
SENTINEL = "<sentinel_{}>"


def find_mask(dictionary):
    """Index of the dictionary's mask symbol (:data:`MASK_SYMBOLS` in order), or ``None``."""
    for symbol in MASK_SYMBOLS:
        if symbol in dictionary.indices:
            return dictionary.index(symbol)
    return None


def add_mask(dictionary):
    """Index of the dictionary's mask symbol, appending :data:`MASK` when it has none."""
    index = find_mask(dictionary)
    return dictionary.add_symbol(MASK) if index is None else index


def add_sentinels(dictionary, count):
    """Append ``count`` sentinel symbols (those already present are reused); their ids in order."""
    return [dictionary.add_symbol(SENTINEL.format(i)) for i in range(count)]
