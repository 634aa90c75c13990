"""Named sizes: what an ``@register_model_architecture`` function does to the model's args.

Each architecture gives every field it names its value unless the command line, or a more
specific architecture that calls it, set the field already; architectures chain from the most
specific (``*_tiny``) to the base.
"""


def set_defaults(args, replace_none=False, **values):
    """Set each ``args.<name>`` in ``values`` that is not set yet (with ``replace_none``, a field
    holding None counts as not set: config objects of dataclass models hold every field)."""
    for name, value in values.items():
        if replace_none:
            if getattr(args, name, None) is None:
                setattr(args, name, value)
        else:
            setattr(args, name, getattr(args, name, value))
