"""Task definitions of the demo suite, one module per repository.

Each module defines EXPERT, MASKED and AUTO: lists of task rows in the SUPER dataset's layout.
"""

from taskdefs import bm25kit, kneser, nbsent, perctag, ppmivec, spkmeans, textrank, tinyreg

MODULES = (tinyreg, nbsent, perctag, bm25kit, kneser, spkmeans, ppmivec, textrank)
