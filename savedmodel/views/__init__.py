"""Views of TensorFlow-format graphs: what `savedmodel graph` prints, as a library.

`select` chooses what to show from a SavedModel (a signature, a library function or the whole
graph) and turns it into a `Body`; the renderers (`text`, `pbtxt`, `dot`, `svg`, `jsonview`)
each turn a selection into one format, and `render` dispatches by format name. Nothing here
runs a graph or needs TensorFlow. Like `savedmodel/__init__.py`, this module imports nothing,
so importing one renderer does not import the others.
"""
