"""The release of the vendor's cerebras.pytorch whose API this package is: `cstorch.__version__`.

ModelZoo 2.10 compares it with the version a checkpoint records (its major.minor must match) and
names its checkpoint format after it ("cs-2.10"), so it is the real package's release string.

`_generating_docs` is the real package's flag for an import made to render its documentation
(then it skips loading its compiled library); ModelZoo imports it to decide the same. This
package has no compiled library to skip, and is never imported for that: the flag is False.
"""

__version__ = "2.10.0"
_generating_docs = False
