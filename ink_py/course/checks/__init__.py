"""The course's checks: each exercise's tests, shipped with the package (``pytest --impl my_ink -m ex1``).

Every test here carries the mark of the exercise it checks (``pytest.mark.ex1`` … ``ex9``) and reaches
the code through the ``ink`` fixture (implementation.py), so the same tests check the reference and a
student's copy. ``ink-py exercise check`` and ``pytest --impl`` run them with ``checks.ini`` as their
configuration (plugin.py), wherever ink_py is installed; the repository's ``python -m pytest`` runs
them with everything else. What they share: helpers.py (fixtures, streamed replies, the linear-time
verdict), raw_server.py and fake_server.py (servers on 127.0.0.1). The fixtures they read come through
``ink_py.scripted.scenarios.fixture_path``, the one place that knows where fixtures/ is.
"""
