"""The crowd batch's life cycle and the provider interface: the kernel of annotation's sub-domains,
which imports none of them (they plug in through :mod:`.services.hooks`)."""
