"""Fit a checkpoint's embedding tables to a model that has fewer rows: pre-training appends
symbols (``<mask>``, sentinels) and may use more positions or streams, always as trailing rows,
so a later phase's model cuts the tables to its sizes when it loads them, each cut logged.
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
