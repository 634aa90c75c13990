"""A small SQuAD v1.1-format sample written for this project (nothing is downloaded): 8 articles,
41 questions, laid out as Du et al. (2017) distribute their split::

    python -m fairseq_ext.cli.squad_sample data/squad_sample
    # -> train.json (6 articles), dev.json (2 articles), doclist-test.txt (2 titles)
"""

import json
from pathlib import Path

# (title, [(context, [(question, answer), ...]), ...]); the answer is the first occurrence.
TRAIN_ARTICLES = [
    ("Lighthouse", [
        ("A lighthouse is a tower built to emit light from a system of lamps and lenses, and it "
         "serves as a navigational aid for ships at sea. The Pharos of Alexandria, completed around "
         "280 BC, is the most famous lighthouse of the ancient world. It stood on a small island "
         "at the entrance of the harbour and was damaged by several earthquakes before it "
         "finally collapsed in the fourteenth century.",
         [("What does a lighthouse serve as for ships at sea?", "a navigational aid"),
          ("Around when was the Pharos of Alexandria completed?", "around 280 BC"),
          ("What damaged the Pharos of Alexandria?", "several earthquakes"),
          ("In which century did the Pharos of Alexandria collapse?", "the fourteenth century")]),
        ("The Fresnel lens was invented by the French physicist Augustin-Jean Fresnel in 1822. "
         "It replaced heavy mirrors with thin concentric rings of glass prisms, so that a single "
         "lamp could be seen from more than twenty miles away. By the end of the century most "
         "coastal lights in Europe and North America used it.",
         [("Who invented the Fresnel lens?", "Augustin-Jean Fresnel"),
          ("In what year was the Fresnel lens invented?", "1822"),
          ("What did the Fresnel lens replace?", "heavy mirrors"),
          ("From how far away could a single lamp be seen with the lens?", "more than twenty miles")]),
    ]),
    ("Honey_bee", [
        ("Honey bees live in colonies that can contain tens of thousands of workers, a few "
         "hundred drones and a single queen. Workers are sterile females that gather nectar and "
         "pollen, build the comb from wax and defend the hive. A worker that finds a rich source "
         "of food tells her sisters where it is by performing the waggle dance.",
         [("How many queens does a honey bee colony have?", "a single queen"),
          ("What do workers build the comb from?", "wax"),
          ("How does a worker tell her sisters where food is?", "by performing the waggle dance"),
          ("What kind of females are workers?", "sterile females")]),
        ("Nectar collected by foragers is passed to house bees, which reduce its water content "
         "by fanning it with their wings until it becomes honey. A strong colony may store more "
         "than forty kilograms of honey in a good season, which feeds it through the winter.",
         [("Who do foragers pass nectar to?", "house bees"),
          ("How do house bees reduce the water content of nectar?", "by fanning it with their wings"),
          ("How much honey may a strong colony store in a good season?", "more than forty kilograms")]),
    ]),
    ("Printing_press", [
        ("Johannes Gutenberg introduced printing with movable metal type to Europe in Mainz "
         "around 1450. His press adapted the screw presses used for making wine, and his "
         "oil-based ink stuck to metal better than the water-based inks of the time. The Bible "
         "he printed in the 1450s survives in fewer than fifty copies.",
         [("Who introduced printing with movable metal type to Europe?", "Johannes Gutenberg"),
          ("In which city did Gutenberg introduce printing?", "Mainz"),
          ("What presses did Gutenberg's press adapt?", "the screw presses used for making wine"),
          ("How many copies of Gutenberg's Bible survive?", "fewer than fifty copies")]),
    ]),
    ("Volcano", [
        ("A volcano is an opening in the crust of a planet through which molten rock, ash and "
         "gases escape from below the surface. Most volcanoes on Earth are found where tectonic "
         "plates pull apart or push together. Iceland sits on the Mid-Atlantic Ridge, where the "
         "North American and Eurasian plates move away from each other.",
         [("What escapes through a volcano?", "molten rock, ash and gases"),
          ("Where are most volcanoes on Earth found?", "where tectonic plates pull apart or push together"),
          ("Which ridge does Iceland sit on?", "the Mid-Atlantic Ridge"),
          ("Which plates move away from each other at Iceland?", "the North American and Eurasian plates")]),
        ("The eruption of Mount Vesuvius in 79 AD buried the Roman towns of Pompeii and "
         "Herculaneum under metres of ash. The letters of Pliny the Younger, who watched the "
         "eruption from across the bay, are the only eyewitness account that survives.",
         [("In what year did Mount Vesuvius bury Pompeii?", "79 AD"),
          ("Which towns did the eruption bury?", "Pompeii and Herculaneum"),
          ("Whose letters are the only surviving eyewitness account?", "Pliny the Younger")]),
    ]),
    ("Penicillin", [
        ("Alexander Fleming noticed in 1928 that a mould growing on one of his culture plates "
         "had killed the bacteria around it. He named the substance penicillin, but it was "
         "Howard Florey and Ernst Chain who found a way to purify it in quantity at Oxford "
         "during the Second World War.",
         [("Who noticed that a mould had killed bacteria on a culture plate?", "Alexander Fleming"),
          ("In what year did Fleming make his observation?", "1928"),
          ("Who found a way to purify penicillin in quantity?", "Howard Florey and Ernst Chain"),
          ("Where was penicillin purified in quantity?", "Oxford")]),
    ]),
    ("Great_Barrier_Reef", [
        ("The Great Barrier Reef, off the coast of Queensland in Australia, is the largest coral "
         "reef system in the world. It is made of nearly three thousand individual reefs and can "
         "be seen from outer space. Rising sea temperatures have caused several mass bleaching "
         "events since 1998.",
         [("Off the coast of which state is the Great Barrier Reef?", "Queensland"),
          ("How many individual reefs make up the Great Barrier Reef?", "nearly three thousand"),
          ("What has caused mass bleaching events?", "Rising sea temperatures"),
          ("Since when have mass bleaching events occurred?", "since 1998")]),
    ]),
]
DEV_ARTICLES = [
    ("Telescope", [
        ("Galileo Galilei built his first telescope in 1609 after hearing of a Dutch invention "
         "that made distant objects appear nearer. With it he observed the phases of Venus and "
         "four moons orbiting Jupiter, evidence that not everything circled the Earth.",
         [("Who built a telescope in 1609?", "Galileo Galilei"),
          ("Whose invention had Galileo heard of?", "a Dutch invention"),
          ("How many moons of Jupiter did Galileo observe?", "four moons"),
          ("Which planet's phases did Galileo observe?", "Venus")]),
    ]),
    ("Silk_Road", [
        ("The Silk Road was a network of trade routes that connected China with the Mediterranean "
         "for more than a thousand years. Besides silk, merchants carried spices, paper and glass, "
         "and the routes also spread religions such as Buddhism across Central Asia.",
         [("What did the Silk Road connect China with?", "the Mediterranean"),
          ("For how long did the Silk Road connect China with the Mediterranean?", "more than a thousand years"),
          ("Which religion spread across Central Asia along the routes?", "Buddhism")]),
    ]),
]
TEST_TITLES = ("Penicillin", "Great_Barrier_Reef")
"""Training-file articles that ``doclist-test.txt`` moves to the test split."""


def squad_json(articles) -> dict:
    """SQuAD v1.1 JSON (``{"version", "data": [{"title", "paragraphs": [{"context", "qas"}]}]}``)
    of ``articles``, with the answers' character offsets."""
    data = []
    for a, (title, paragraphs) in enumerate(articles):
        entries = []
        for p, (context, questions) in enumerate(paragraphs):
            qas = []
            for q, (question, answer) in enumerate(questions):
                start = context.index(answer)
                qas.append({"id": f"{a:02d}{p:02d}{q:02d}", "question": question,
                            "answers": [{"text": answer, "answer_start": start}]})
            entries.append({"context": context, "qas": qas})
        data.append({"title": title, "paragraphs": entries})
    return {"version": "1.1", "data": data}


def write_sample(out_dir) -> dict[str, Path]:
    """Write ``train.json``, ``dev.json`` and ``doclist-test.txt`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"train": out / "train.json", "dev": out / "dev.json", "doclist_test": out / "doclist-test.txt"}
    paths["train"].write_text(json.dumps(squad_json(TRAIN_ARTICLES), indent=1) + "\n", encoding="utf-8")
    paths["dev"].write_text(json.dumps(squad_json(DEV_ARTICLES), indent=1) + "\n", encoding="utf-8")
    paths["doclist_test"].write_text("".join(t + "\n" for t in TEST_TITLES), encoding="utf-8")
    return paths
