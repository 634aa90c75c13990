"""Fit a checkpoint's embedding tables to a model that has fewer rows.

Pre-training appends symbols to the dictionary (``<mask>``, span sentinels) and may train with
longer targets or more predicting streams than a later phase. A model for that later phase,
built on the plain dictionary, has fewer rows in those tables; the rows it has are the leading
ones (appended symbols and extra positions come last), so the checkpoint's tables are cut to
the model's sizes when it is loaded (``upgrade_state_dict_named``), each cut logged, instead
of failing on a size mismatch. Tables the model has more rows of are left to fail loudly.
"""

import logging

logger = logging.getLogger(__name__)


def keep_leading_rows(state_dict, model_state, keys, prefix=""):
    """Cut ``state_dict[prefix + key]`` to the rows of ``model_state[key]`` for every ``key`` in
    ``keys`` that both hold and that the checkpoint has more rows of (in place, logged)."""
    for key in keys:
        full = prefix + key
        if full not in state_dict or key not in model_state:
            continue
        rows, loaded = model_state[key].size(0), state_dict[full].size(0)
        if loaded > rows:
            logger.info(f"{full}: keeping the first {rows} of {loaded} rows")
            state_dict[full] = state_dict[full][:rows]
