"""What ``ink-py exercise`` says outside ``check``'s explanation, in English and in Chinese.

``language.say`` looks a key up here (and in ``language.WORDS``, ``check``'s own sentences):
the commands' help, ``list``, ``start``, ``hint``, ``reset``, ``diff``, ``check --all``,
``report``, the progress while the tests run, every ``error:`` and ``warning:`` line, and
argparse's own words (``usage:``, its mistakes). Identifiers, commands, paths and values are
filled in where ``{…}`` stands, never translated; tests/test_course_language.py runs every
command in both languages and finds no sentence of the other one.

    >>> COMMAND_WORDS["hint_label"]
    ('hint {i}/{n}: ', '提示 {i}/{n}:')
"""

from __future__ import annotations

# key → (English, Chinese)
COMMAND_WORDS: dict[str, tuple[str, str]] = {
    # ── help: ink-py exercise --help, and each command's ──────────────────────────────────
    "description": (
        "Course exercises: re-implement the article one piece at a time; the project's tests check it.",
        "课程练习:把文章的代码一段一段自己写一遍,用项目自己的测试检查。",
    ),
    "overview": (
        "commands:\n"
        "  list  [DIR]            the exercises and how far you are\n"
        "  start NAME [DIR]       copy ink_py to DIR (default ./my_ink) with exercise NAME cut out\n"
        "  check NAME [DIR]       run exercise NAME's tests on DIR and explain the first failure\n"
        "  check --all [DIR]      check every started exercise; a table of where each stands\n"
        "        --whole-suite    then the project's whole suite on DIR (minutes; a source checkout)\n"
        "  hint  NAME [DIR]       one more hint\n"
        "  reset NAME [DIR]       put exercise NAME's stub back (asks first; --yes for scripts)\n"
        "  diff  NAME [DIR]       once NAME is green: your code beside the reference\n"
        "  report [DIR]           what a teacher collects: exercise-report.json and exercise-report.xml\n"
        "                         (JUnit) in the current folder, or --json PATH / --junit PATH\n"
        "  watch [DIR]            the first exercise not green, checked again at every save;\n"
        "                         keys h hint, l list, n next, q quit (no Enter)\n"
        "\n"
        "NAME is a number or a slug (1 or parse-frame). DIR can also be given as --dir DIR.\n"
        "Each command takes --help.\n"
        "The same tests, straight:      python -m pytest --impl my_ink -m ex1\n"
        "The §3 demo over your copy:    python -m my_ink demo",
        "命令:\n"
        "  list  [DIR]            练习列表,以及你做到了哪里\n"
        "  start NAME [DIR]       把 ink_py 复制到 DIR(默认 ./my_ink),挖掉练习 NAME\n"
        "  check NAME [DIR]       在 DIR 上跑练习 NAME 的测试,说明第一个失败\n"
        "  check --all [DIR]      检查每个开始了的练习,列一张表\n"
        "        --whole-suite    然后在 DIR 上跑项目的整套测试(要几分钟;要源码仓库)\n"
        "  hint  NAME [DIR]       再给一条提示\n"
        "  reset NAME [DIR]       把练习 NAME 恢复成桩(先问你;脚本里用 --yes)\n"
        "  diff  NAME [DIR]       练习 NAME 通过之后:你的代码和参考实现并排\n"
        "  report [DIR]           给老师的:当前目录里的 exercise-report.json 和 exercise-report.xml\n"
        "                         (JUnit),或者 --json PATH / --junit PATH\n"
        "  watch [DIR]            从第一个还没通过的练习开始,每次保存都重新检查;\n"
        "                         按键 h 提示、l 列表、n 下一个、q 退出(不用回车)\n"
        "\n"
        "NAME 是编号或者短名(1 或 parse-frame)。DIR 也可以写成 --dir DIR。\n"
        "每个命令都有 --help。\n"
        "直接跑同一组测试:        python -m pytest --impl my_ink -m ex1\n"
        "在你的副本上看 §3 的演示:python -m my_ink demo",
    ),
    "help_list": ("The exercises, in article order, and how far you are.", "按文章顺序列出练习,以及你做到了哪里。"),
    "help_start": (
        "Copy ink_py to DIR (default ./my_ink) with exercise NAME cut out; more exercises stub more of the copy.",
        "把 ink_py 复制到 DIR(默认 ./my_ink),挖掉练习 NAME;再开始别的练习,就在同一个副本里再挖掉一段。",
    ),
    "help_check": (
        "Run exercise NAME's tests on DIR and explain the first failure; --all: every started exercise.",
        "在 DIR 上跑练习 NAME 的测试,说明第一个失败;--all:每个开始了的练习。",
    ),
    "help_hint": (
        "One more hint each time, the ones your last failed check calls for first.",
        "每次多给一条提示,先给和你上次失败的检查有关的那条。",
    ),
    "help_reset": (
        "Put exercise NAME's stub back; your code is kept in DIR/.reset/ (asks first; --yes for scripts).",
        "把练习 NAME 恢复成桩;你的代码存在 DIR/.reset/ 里(先问你;脚本里用 --yes)。",
    ),
    "help_diff": (
        "Once NAME is green: your code beside the reference, region by region.",
        "练习 NAME 通过之后:你的代码和参考实现逐段并排。",
    ),
    "help_report": (
        "What a teacher collects: exercise-report.json and exercise-report.xml (JUnit) in the current folder.",
        "给老师的:在当前目录写出 exercise-report.json 和 exercise-report.xml(JUnit)。",
    ),
    "help_watch": (
        "Check the first exercise that is not green (starting it if needed), and again at every save under DIR. "
        "Keys, no Enter: h the next hint, l the list, n the next exercise once this one is green, q quit; "
        "when stdin is no terminal, a line per command.",
        "检查第一个还没通过的练习(需要时先开始它),DIR 里每保存一次就再检查一次。按键不用回车:h 下一条提示,"
        "l 练习列表,n 这个通过之后去下一个,q 退出;标准输入不是终端时,每行一个命令。",
    ),
    "arg_dir_before": (
        "the working copy (default ./{default}); also after the command",
        "工作副本(默认 ./{default});也可以写在命令后面",
    ),
    "arg_commands": ("{commands}", "{commands}"),
    "arg_name": ("the exercise: a number or a slug (1, ex1, parse-frame)", "练习:编号或者短名(1、ex1、parse-frame)"),
    "arg_name_check": ("the exercise: a number or a slug", "练习:编号或者短名"),
    "arg_all": ("check every started exercise; a table", "检查每个开始了的练习,列一张表"),
    "arg_whole_suite": (
        "once every exercise is green, also run the project's whole test suite on the copy: several "
        "minutes, and it needs the project's tests (a source checkout of ink_py, or its sdist unpacked)",
        "所有练习都通过之后,再在副本上跑项目的整套测试:要好几分钟,"
        "而且要有项目的测试(ink_py 的源码仓库,或者解开的 sdist)",
    ),
    "arg_folder": ("the working copy (default ./{default})", "工作副本(默认 ./{default})"),
    "arg_dir": ("the same, as an option", "同上,写成选项"),
    "arg_yes": ("do not ask first (for scripts)", "不先问(给脚本用)"),
    "arg_json": ("the JSON report", "JSON 格式的报告"),
    "arg_junit": ("the JUnit XML", "JUnit XML 格式的报告"),
    "arg_help": ("show this help and exit", "显示这段帮助,然后退出"),
    # argparse's own words, as CourseParser says them
    "usage_prefix": ("usage: ", "用法:"),
    "positionals": ("positional arguments", "位置参数"),
    "optionals": ("options", "选项"),
    "see_help": ("error: {message} (see {prog} --help)", "error: {message}(见 {prog} --help)"),
    "unrecognized": ("unrecognized arguments: {rest}", "不认识的参数:{rest}"),
    "required": ("the following arguments are required: {rest}", "缺少参数:{rest}"),
    "invalid_choice": ("invalid choice: {value} (choose from {choices})", "没有这个命令:{value}(可选:{choices})"),
    "one_argument": ("expected one argument", "后面要跟一个值"),
    "argument": ("argument {name}: {rest}", "参数 {name}:{rest}"),
    "empty_path": ("needs a path, not an empty string", "要给一个路径,不能是空串"),
    # ── usage mistakes ────────────────────────────────────────────────────────────────────
    "which_command": ("which command? {commands}", "哪个命令?{commands}"),
    "too_many": ("too many arguments for check: {rest}", "check 的参数太多了:{rest}"),
    "which_exercise": ("which exercise? e.g. ink-py exercise check 1", "哪个练习?例如 ink-py exercise check 1"),
    "folder_once": ("give the folder once", "目录只能给一次"),
    "not_available": (
        "exercise {n} is not available yet: the source has no markers for it",
        "练习 {n} 还不能做:源码里还没有它的标记",
    ),
    "no_exercise": ("no exercise {name}; the exercises are: {slugs}", "没有练习 {name};练习有:{slugs}"),
    # ── list ──────────────────────────────────────────────────────────────────────────────
    "list_heading": ("Course exercises ({where})", "课程练习({where})"),
    "list_copy": ("working copy: {folder}", "工作副本:{folder}"),
    "list_not_copy": ("{folder} is not a working copy", "{folder} 不是工作副本"),
    "list_no_copy": ("no working copy at {folder} yet", "{folder} 还没有工作副本"),
    "status_skipped": ("skipped until chunks.py has exercise markers", "跳过,等 chunks.py 有了练习标记再做"),
    "status_unavailable": ("not available yet", "还不能做"),
    "status_not_started": ("not started", "还没开始"),
    "status_passed": ("passed (last check green)", "通过了(上次检查通过)"),
    "status_stub": ("started (stub still present)", "开始了(桩还在)"),
    "status_red": ("started (last check red)", "开始了(上次检查没通过)"),
    "status_unchecked": ("started (not checked yet)", "开始了(还没检查)"),
    # ── hint ──────────────────────────────────────────────────────────────────────────────
    "hint_heading": ("exercise {n} · {slug} — {reading}", "练习 {n} · {slug} —— {reading}"),
    "hint_label": ("hint {i}/{n}: ", "提示 {i}/{n}:"),
    "hint_last": (
        "(that was the last hint — the reference is in ink_py, if you want to compare)",
        "(这已经是最后一条提示了 —— 想对照的话,参考实现在 ink_py 里)",
    ),
    "no_hints": ("exercise {n} has no hints yet", "练习 {n} 还没有提示"),
    # ── start ─────────────────────────────────────────────────────────────────────────────
    "started": ("started exercise {n} · {slug} — {title}", "开始了练习 {n} · {slug} —— {title}"),
    "made_copy": (
        "in {folder} (a new copy of ink_py, importable as package {package}). Write your code in place of the stub:",
        "在 {folder} 里(新复制的 ink_py,可以作为包 {package} 导入)。在桩的位置写你的代码:",
    ),
    "in_copy": ("in {folder}. Write your code in place of the stub:", "在 {folder} 里。在桩的位置写你的代码:"),
    "read_first": ("read first:  {reading}", "先读:      {reading}"),
    "then_check": ("then check:  ink-py exercise check {n}{dir}", "再检查:    ink-py exercise check {n}{dir}"),
    "stuck_hint": ("stuck?       ink-py exercise hint {n}{dir}", "卡住了?    ink-py exercise hint {n}{dir}"),
    "watch_it": (
        "watch it:    {demo}   (the §3 demo, over your own code)",
        "看它运行:  {demo}   (§3 的演示,跑的是你自己的代码)",
    ),
    "already_started": (
        "exercise {n} · {slug} is already started in {folder} — nothing changed.",
        "练习 {n} · {slug} 已经在 {folder} 里开始了 —— 什么都没改。",
    ),
    "from_reference": (
        "run ink-py exercise from the reference ink_py, not from a working copy",
        "请用参考实现 ink_py 运行 ink-py exercise,不要用工作副本",
    ),
    "is_a_file": ("{folder} is a file, not a folder for the working copy", "{folder} 是一个文件,不是放工作副本的目录"),
    "not_a_copy": (
        "{folder} already exists and is not a working copy made by ink-py exercise start (no {state}); "
        "pick another folder",
        "{folder} 已经存在,而且不是 ink-py exercise start 做的工作副本(没有 {state});换一个目录",
    ),
    "bad_name": (
        "{folder} cannot be a package: its name must be a new Python identifier such as my_ink",
        "{folder} 不能作为包:它的名字必须是一个新的 Python 标识符,例如 my_ink",
    ),
    "region_edited": (
        "{where}: exercise {n}'s region differs from ink_py's — did you edit it? Nothing was changed",
        "{where}:练习 {n} 的那段代码和 ink_py 的不一样 —— 你改过它吗?什么都没改",
    ),
    "region_lost": (
        "{where}: exercise {n}'s code cannot be found (markers changed or removed, or the file does not parse); "
        "nothing was changed — put it back as in ink_py, or start afresh in a new folder",
        "{where}:找不到练习 {n} 的代码(标记被改了或删了,或者文件解析不了);什么都没改 —— 照 ink_py 改回去,"
        "或者换一个新目录重新开始",
    ),
    # ── reset and diff ────────────────────────────────────────────────────────────────────
    "no_copy": ("no working copy at {folder}", "{folder} 没有工作副本"),
    "not_started_reset": (
        "exercise {n} is not started in {folder}: nothing to reset",
        "练习 {n} 在 {folder} 里还没开始:没有可以恢复的",
    ),
    "reset_needs_terminal": (
        "reset asks before it throws your code away: run it in a terminal, or add --yes",
        "reset 丢掉你的代码之前要先问你:在终端里运行它,或者加 --yes",
    ),
    "reset_ask": (
        "reset exercise {n} · {slug} in {folder} to its stub? Your code in its {count} region(s) is replaced "
        "(a copy is kept in {folder}/.reset/). [y/N] ",
        "把 {folder} 里的练习 {n} · {slug} 恢复成桩?它 {count} 段代码会被替换(副本存在 {folder}/.reset/)。[y/N] ",
    ),
    "nothing_changed": ("nothing changed.", "什么都没改。"),
    "reset_done": (
        "exercise {n} · {slug} is back to its stub in {folder}; every other exercise's code is as you left it.",
        "{folder} 里的练习 {n} · {slug} 恢复成桩了;别的练习的代码原样没动。",
    ),
    "your_code_was": ("your code was: {backup}", "你原来的代码:{backup}"),
    "too_many_backups": (
        "{where} holds 9999 backups named {stem}: move some away",
        "{where} 里已经有 9999 份 {stem} 的备份:挪走一些",
    ),
    "not_green_diff": (
        "exercise {n} is not green yet: the reference is shown once your own code passes — "
        "ink-py exercise check {n}{dir}",
        "练习 {n} 还没通过:你的代码通过之后才给你看参考实现 —— ink-py exercise check {n}{dir}",
    ),
    "diff_heading": (
        "exercise {n} · {slug}: yours (left) · the reference (right)",
        "练习 {n} · {slug}:你的(左)· 参考实现(右)",
    ),
    "diff_same": ("  (the same as the reference, line for line)", "  (和参考实现逐行相同)"),
    # ── markers a copy breaks ─────────────────────────────────────────────────────────────
    "marker_nested": ("{at}: a region opens inside exercise {n}'s", "{at}:练习 {n} 的区域里又开了一个区域"),
    "marker_stray": ("{at}: '# exercise {n} ▲' closes no open region", "{at}:'# exercise {n} ▲' 没有对应的开头"),
    "marker_indent": (
        "{at}: the closing marker's indentation differs from the opening's",
        "{at}:结束标记的缩进和开头标记的不一样",
    ),
    "marker_no_code": ("{at}: exercise {n}'s region has no code", "{at}:练习 {n} 的区域里没有代码"),
    "marker_dedented": (
        "{at}: a line of exercise {n}'s region is indented less than its markers",
        "{at}:练习 {n} 的区域里有一行缩进比标记少",
    ),
    "marker_unclosed": ("{at}: exercise {n}'s region is never closed", "{at}:练习 {n} 的区域没有结束标记"),
    "marker_missing": (
        "{where}: exercise {n}'s function {name} is not defined there",
        "{where}:练习 {n} 的函数 {name} 不在那里",
    ),
    "stub_message": (
        "exercise {n} not written yet: {title} — see {reading}",
        "练习 {n} 还没写:{title} —— 见 {reading}",
    ),
    # ── check's errors ────────────────────────────────────────────────────────────────────
    "no_copy_start": (
        "no working copy at {folder} — start with: ink-py exercise start {n}",
        "{folder} 没有工作副本 —— 先运行:ink-py exercise start {n}",
    ),
    "not_started_check": (
        "exercise {n} is not started in {folder} (its code there is still the reference's) — "
        "run: ink-py exercise start {n}{dir}",
        "练习 {n} 在 {folder} 里还没开始(那里的代码还是参考实现的)—— 运行:ink-py exercise start {n}{dir}",
    ),
    "needs_pytest": ("the checks need pytest: pip install -e '.[test]'", "检查要用 pytest:pip install -e '.[test]'"),
    "could_not_run": ("the tests could not run: {tail}", "测试没能运行:{tail}"),
    "could_not_run_exit": (
        "the tests could not run (pytest exit {code}): {tail}",
        "测试没能运行(pytest 退出码 {code}):{tail}",
    ),
    "no_marked_test": (
        "no test is marked ex{n}; the exercise cannot be checked",
        "没有测试带 ex{n} 标记;这个练习没法检查",
    ),
    "in_function": ("{where} in {function}", "{where},{function} 里"),
    "more_lines": ("… ({count} more lines)", "…(还有 {count} 行)"),
    "characters": ("({count} characters)", "(共 {count} 个字符)"),
    "bytes": ("({count} bytes)", "(共 {count} 字节)"),
    # ── check --all and report ────────────────────────────────────────────────────────────
    "no_copy_all": (
        "no working copy at {folder} — start with: ink-py exercise start 1",
        "{folder} 没有工作副本 —— 先运行:ink-py exercise start 1",
    ),
    "none_started": (
        "no exercise is started in {folder} — run: ink-py exercise start 1",
        "{folder} 里还没有开始任何练习 —— 运行:ink-py exercise start 1",
    ),
    "no_copy_report": ("no working copy at {folder} — nothing to report", "{folder} 没有工作副本 —— 没有可报告的"),
    "suite_needs_tests": (
        "--whole-suite needs the project's tests, which an installed wheel does not have: run it from a source "
        "checkout of ink_py (or its sdist unpacked) installed with pip install -e '.[test]'; without it, check --all "
        "runs every exercise's own checks",
        "--whole-suite 要用项目的测试,装好的 wheel 里没有:请在 ink_py 的源码仓库(或者解开的 sdist)里用 "
        "pip install -e '.[test]' 安装后再运行;不加它,check --all 会跑每个练习自己的检查",
    ),
    "whole_suite_with_all": (
        "--whole-suite goes with --all: ink-py exercise check --all --whole-suite",
        "--whole-suite 要和 --all 一起用:ink-py exercise check --all --whole-suite",
    ),
    "table_heading": ("Course exercises in {folder}", "{folder} 里的课程练习"),
    "col_exercise": ("exercise", "练习"),
    "col_state": ("state", "状态"),
    "col_tests": ("tests passed", "通过的测试"),
    "col_hints": ("hints used", "用过的提示"),
    "state_green": ("green", "通过"),
    "state_red": ("red", "没通过"),
    "state_not_started": ("not started", "还没开始"),
    "state_not_checked": ("not checked", "还没检查"),
    "state_not_available": ("not available", "还不能做"),
    "report_written": (
        "{green} of {total} exercises green{whole} · wrote {json} and {xml} (JUnit)",
        "{total} 个练习里 {green} 个通过{whole} · 写出了 {json} 和 {xml}(JUnit)",
    ),
    "report_whole": (" · the whole suite {state}", " · 整套测试{state}"),
    # ── progress, while the tests run ─────────────────────────────────────────────────────
    "progress_exercise": ("checking exercise {n} · {slug}", "正在检查练习 {n} · {slug}"),
    "progress_suite": ("the whole suite on your copy", "在你的副本上跑整套测试"),
    "progress_collecting": ("{what}: collecting the tests …", "{what}:正在收集测试……"),
    "progress_count": ("{what}: {done}/{total} tests", "{what}:{done}/{total} 个测试"),
    "progress_now": (" · now {where}", " · 正在跑 {where}"),
    "progress_of_exercise": (" (exercise {numbers})", "(练习 {numbers})"),
    # ── watch ─────────────────────────────────────────────────────────────────────────────
    "watch_skipped": (
        "exercise {n} · {slug} is not available on this install (its source has no markers): skipped",
        "练习 {n} · {slug} 在这个安装里还不能做(源码里没有它的标记):跳过",
    ),
    "watch_progress": ("progress [{bar}] {done}/{total}", "进度 [{bar}] {done}/{total}"),
    "watch_now": (" · now exercise {n} · {slug}", " · 现在是练习 {n} · {slug}"),
    "watch_keys": (
        "watching {folder}: every save checks again · h hint · l list · n next (once green) · q quit",
        "正在看着 {folder}:每次保存都重新检查 · h 提示 · l 列表 · n 下一个(通过之后)· q 退出",
    ),
    "watch_lines": (
        "watching {folder}: every save checks again · type h (hint), l (list), n (next, once green) or q (quit), "
        "then Enter; the end of the input quits",
        "正在看着 {folder}:每次保存都重新检查 · 输入 h(提示)、l(列表)、n(下一个,通过之后)或 q(退出),"
        "再按回车;输入结束就退出",
    ),
    "watch_not_green": (
        "exercise {n} · {slug} is not green yet: n moves on once its check passes (save your code to check again)",
        "练习 {n} · {slug} 还没通过:检查通过之后 n 才去下一个(保存你的代码就会再检查)",
    ),
    "watch_bye": (
        "stopped watching; your progress is kept in {folder} — go on with: ink-py exercise watch{dir}",
        "不看了;你的进度留在 {folder} 里 —— 接着做:ink-py exercise watch{dir}",
    ),
    "watch_done": (
        "all {total} exercises are green: you have written the article's pieces yourself. Well done!",
        "{total} 个练习全部通过:文章里的这些代码,你都自己写了一遍。做得好!",
    ),
    "watch_too_many": (
        "warning: {folder} holds more than {count} files; saves are seen among the first {count} only",
        "warning: {folder} 里的文件超过 {count} 个;只看得到前 {count} 个文件的保存",
    ),
    # ── the progress file ─────────────────────────────────────────────────────────────────
    "state_damaged": (
        "warning: {path} was damaged ({what}); what was wrong was reset, {where}",
        "warning: {path} 坏了({what});坏的部分已经重置,{where}",
    ),
    "state_kept": ("the old file is kept as {kept}", "旧文件留在 {kept}"),
    "state_unrepaired": (
        "it could not be repaired ({error}); move it away to start afresh",
        "没能修好它({error});把它挪走就能从头开始",
    ),
    "and_more": ("; and {count} more", ";还有 {count} 处"),
    "state_not_file": ("not a progress file ({why})", "不是进度文件"),  # why: Python's words, English only
    "state_too_big": ("more than {kib} KiB", "超过 {kib} KiB"),
    "state_not_object": ("not a JSON object but {kind}", "不是 JSON 对象,而是 {kind}"),
    "bad_made_by": ("made_by: {value} is not {expected}", "made_by: {value} 不是 {expected}"),
    "bad_started": ("started: {value} is not a list of exercise numbers", "started: {value} 不是练习编号的列表"),
    "bad_table": ("{name}: {value} is not a table of exercises", "{name}: {value} 不是按练习登记的表"),
    "bad_key": ("{name}: {value} is not an exercise", "{name}: {value} 不是练习编号"),
    "bad_entry": ("{name}[{which}]: {value} is not {wanted}", "{name}[{which}]: {value} 不是{wanted}"),
    "bad_suite": ('suite: {value} is not "green" or "red"', 'suite: {value} 不是 "green" 或 "red"'),
    "want_green_red": ('"green" or "red"', ' "green" 或 "red"'),
    "want_count": ("a count from 0 to {top}", " 0 到 {top} 之间的计数"),
    "want_tests": ('{{"passed": count, "selected": count}}', ' {{"passed": 计数, "selected": 计数}}'),
    "want_time": ("a UTC time", " UTC 时间"),
    "want_shown": ("a list of the hints shown", "显示过的提示编号的列表"),
    "want_test_name": ("a test's name", "测试名"),
}
