"""Reads of what a batch's answers add up to, one module per concept (import the module that defines
a name): :mod:`.labels`, :mod:`.cache`, :mod:`.agreement`, :mod:`.gold`, :mod:`.state`."""
