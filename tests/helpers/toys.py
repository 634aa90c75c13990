"""Toy inputs the tests share: the toy dictionary every model, noising and criterion test builds
on, and a SQuAD file with every kind of bad entry.

    d = toy_dictionary(40)                                   # fairseq's 4 specials + w0 .. w39
    d = toy_dictionary(30, "<mask>", *sentinel_symbols(4))   # then the symbols, in that order
    mask = d.index("<mask>")

Tests that need one by fixture use ``toy_dictionary`` from ``tests/conftest.py``, which is this
function.
"""

from fairseq.data import Dictionary

from fairseq_ext.data.squad_sample import TRAIN_ARTICLES, squad_json


def toy_dictionary(words, *symbols):
    """A fairseq :class:`Dictionary`: the four specials, ``w0`` .. ``w{words - 1}``, then
    ``symbols`` (mask, sentinels, a delimiter ...) in the order given."""
    dictionary = Dictionary()
    for i in range(words):
        dictionary.add_symbol(f"w{i}")
    for symbol in symbols:
        dictionary.add_symbol(symbol)
    return dictionary


def sentinel_symbols(count):
    """``<sentinel_0>`` .. ``<sentinel_{count - 1}>``, the spelling the span-corruption tests use."""
    return [f"<sentinel_{i}>" for i in range(count)]


def bad_squad():
    """The sample's training articles plus one article with every kind of bad entry."""
    corpus = squad_json(TRAIN_ARTICLES)
    context = "The river Danube flows through ten countries. It ends in the Black Sea."
    bad_entries = [
        {"id": "b0", "question": "Through how many countries does the Danube flow?",
         "answers": [{"text": "ten countries", "answer_start": 3}]},              # wrong offset
        {"id": "b1", "question": "   ", "answers": [{"text": "ten countries", "answer_start": 31}]},  # empty
        {"id": "b2", "answers": [{"text": "ten countries", "answer_start": 31}]},  # no question
        {"id": "b3", "question": "Where does it end?", "answers": []},            # unanswerable
        {"id": "b4", "question": "What river?", "answers": [{"text": "the Rhine", "answer_start": 0}]},
        {"id": "b5", "question": "Where does it end?", "answers": [{"text": "the Black Sea", "answer_start": "x"}]},
    ]
    corpus["data"].append({"title": "Danube", "paragraphs": [
        {"context": context, "qas": bad_entries},
        {"qas": [{"id": "b6", "question": "Lost?", "answers": [{"text": "x", "answer_start": 0}]}]},  # no context
        {"context": "no questions here"},                                          # no qas list
    ]})
    return corpus
