"""The checkout's own conftest: ``--impl`` (ink_py/course/impl_option.py) even with plugin autoload off.

pytest loads this file before it reads the rest of the command line, so
``pytest --impl my_ink -m ex1`` works from here when the installed entry point does not.
"""

pytest_plugins = ["ink_py.course.impl_option"]
