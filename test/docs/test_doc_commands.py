#!/usr/bin/env python3
"""Every command the README and the guide (docs/*.md) show, run or checked.

Usage: test_doc_commands.py BUILDDIR [SRCDIR] [FILE.md ...]

Commands are the lines of code blocks and the inline code spans that start
with a command word.  What needs no GPU runs here: `ompi_info | grep ...`,
gpucoll-topo (on the fixture files where a file is named), the tools' --help,
`mpirun ... ./app` with the host-collectives test as the application under the
CUDA-driver stand-in (test/fake).  The rest is checked: every option of
configure, the tools and install-deps.sh is one they accept, every make target
exists in the build, every script, man page, module and Spack variant named
exists, every MCA parameter named anywhere (`--mca X`, OMPI_MCA_X, a bare
coll_gpu_X or op_gpu_X) is one that ompi_info lists, every relative link
resolves, and the README's test command is the one CI runs (.ci/run).
Unknown command words fail: a new kind of command needs a rule here.
Ends with "N passed, N failed" (one line per failure before it).
"""
import glob
import os
import re
import shlex
import subprocess
import sys

B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
T = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else
                    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOCS = sys.argv[3:] or (["README.md"] + sorted(os.path.relpath(p, T)
                                              for p in glob.glob(os.path.join(T, "docs", "*.md"))))
# block diagrams, not commands
DIAGRAMS = {"docs/architecture.md"}
# commands of other projects shown for the reader to run on their machine
EXTERNAL = {"nvidia-smi", "docker", "nvidia-cuda-mps-control", "cd", "mkdir", "export", "git"}
TOOLS = {"gpucoll_bench": "test/bench/gpucoll_bench",
         "gpucoll_appbench": "test/bench/gpucoll_appbench",
         "gpucoll-topo": "tools/gpucoll-topo"}
# options of Open MPI's own configure that the guide tells the reader about
OMPI_CONFIGURE = {"--with-devel-headers"}
# placeholders the guide writes for the reader's own values
PLACEHOLDER = {"N": "2", "G": "4", "FILE": None, "F": None, "DIR": "/nonexistent", "S": "8",
               "node.xml": "test/topo/fixtures/dgx_h100.xml", "<coll>": "allreduce"}

npass = nfail = 0
cache = {}


def result(ok, what, where):
    global npass, nfail
    if ok:
        npass += 1
    else:
        nfail += 1
        print("FAIL %s: %s" % (where, what))


def sh(cmd, env=None, timeout=120):
    e = dict(os.environ)
    e.update(env or {})
    try:
        p = subprocess.run(cmd, shell=True, capture_output=True, text=True, env=e, timeout=timeout,
                           cwd=T)
    except subprocess.TimeoutExpired:
        return 124, "timed out after %d s" % timeout
    return p.returncode, p.stdout + p.stderr


def once(key, cmd):
    if key not in cache:
        cache[key] = sh(cmd)[1]
    return cache[key]


def mca_params():
    """Every MCA parameter and framework name ompi_info knows, ours included."""
    if "mca" not in cache:
        names = set()
        for line in once("all", "ompi_info --all --parsable").split("\n"):
            m = re.match(r"^mca:(\w+):(\w+):param:(\w+):", line)
            if m:
                names.update({m.group(1), m.group(3)})
        for fw in ("coll", "op"):
            for line in once(fw, "ompi_info --param %s gpu --level 9 --parsable" % fw).split("\n"):
                m = re.match(r"^mca:\w+:\w+:param:(\w+):", line)
                if m:
                    names.add(m.group(1))
        cache["mca"] = names
    return cache["mca"]


def help_options(text):
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text))


def tool_options(tool):
    path = os.path.join(B, TOOLS[tool])
    return help_options(once("help-" + tool, "'%s' --help" % path))


def check_options(opts, known, what, where):
    for o in opts:
        base = o.split("=", 1)[0]
        result(base in known, "%s does not accept %s" % (what, base), where)


def unplace(tok):
    tok = tok.strip("[]")
    return PLACEHOLDER.get(tok, tok)


def check_mpirun(args, where, run_it):
    """mpirun's own options, its --mca names, then the program and its options."""
    i = 0
    mca = []
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in ("--mca", "-mca"):
            mca.append(args[i + 1])
            i += 3
        elif a in ("-np", "-n", "-x", "--bind-to", "--map-by", "-H", "--host"):
            i += 2
        else:
            i += 1
    for name in [n for n in mca if not n.isupper()]:
        result(name in mca_params(), "mpirun --mca %s: no such MCA parameter or framework" % name,
               where)
    if i >= len(args):
        return
    prog, rest = args[i], args[i + 1:]
    if prog in TOOLS:
        check_tool(prog, rest, where, run_it=False)
        if run_it and all(unplace(a) is not None for a in rest):
            # no GPU here: the tool parses its arguments, says so and ends with 0
            cmd = "mpirun --oversubscribe %s '%s' %s" % (
                " ".join(shlex.quote(unplace(a)) for a in args[:i]), os.path.join(B, TOOLS[prog]),
                " ".join(shlex.quote(unplace(a)) for a in rest))
            rc, out = sh(cmd, COMPONENT_ENV)
            result(rc == 0 and "no CUDA device visible" in out, "'%s': rc %d: %s" % (
                cmd, rc, out[-300:]), where)
    elif prog == "./app":
        if not run_it:
            return
        # the reader's application: the host-collectives test under the stand-in
        cmd = ("env LD_LIBRARY_PATH='%s/test/fake' mpirun --oversubscribe %s "
               "'%s/test/mpi/test_host_colls'") % (
            B, " ".join(shlex.quote(unplace(a)) for a in args[:i]), B)
        env = dict(COMPONENT_ENV, OMPI_MCA_coll_gpu_verbose="1")
        rc, out = sh(cmd, env)
        # the stand-in in effect: coll/gpu enabled, as on a GPU node, and the results right
        result(rc == 0 and " 0 failed" in out and "coll/gpu: enabled on MPI_COMM_WORLD" in out,
               "'%s' with the stand-in (coll/gpu must be enabled): rc %d: %s" % (
                   cmd, rc, out[-300:]), where)
    else:
        result(False, "mpirun runs '%s': no rule for this program" % prog, where)


def check_tool(tool, args, where, run_it=True):
    opts = [a for a in args if a.startswith("-")]
    check_options(opts, tool_options(tool), tool, where)
    if tool == "gpucoll-topo" and run_it:
        vals = []
        tmp = None
        for a in args:
            v = unplace(a)
            if v is None:
                tmp = tmp or os.path.join(B, "doc_commands_topo.xml")
                v = tmp
            vals.append(v)
        cmd = "'%s' %s" % (os.path.join(B, TOOLS[tool]), " ".join(shlex.quote(v) for v in vals))
        rc, out = sh(cmd)
        result(rc == 0, "'%s' failed (rc %d): %s" % (cmd, rc, out[-300:]), where)
        if tmp and os.path.exists(tmp):
            os.remove(tmp)


def check_simple(words, where, run_it):
    """One command without && ; or |."""
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        m = re.match(r"^OMPI_MCA_(\w+)=", words[0])
        if m:
            result(m.group(1) in mca_params(), "%s: no such MCA parameter" % words[0], where)
        words = words[1:]
    if not words:
        return
    words = [x.strip("[]") for x in words]
    w, args = words[0], words[1:]
    if len(words) == 1 and w.endswith(".sh") and "/" not in w:
        # a script named by its file name: it exists somewhere in the tree
        result(w in FILES, "no script named %s in the tree" % w, where)
        return
    if w in EXTERNAL:
        return
    if w in ("sh", "bash") or w.endswith(".sh"):
        script = args[0] if w in ("sh", "bash") else w
        path = os.path.join(T, script)
        result(os.path.isfile(path), "script %s does not exist" % script, where)
        if os.path.isfile(path):
            text = open(path, encoding="utf-8", errors="replace").read()
            for o in [a for a in (args[1:] if w in ("sh", "bash") else args) if a.startswith("-")]:
                result(o in text, "%s does not handle %s" % (script, o), where)
    elif w.endswith("configure"):
        check_options([a for a in args if a.startswith("--") and a not in OMPI_CONFIGURE],
                      help_options(once("configure", "'%s/configure' --help" % T)), "configure",
                      where)
    elif w == "make":
        for t in [a for a in args if not a.startswith("-")] or ["all"]:
            rc, out = sh("make -n -C '%s' %s" % (B, shlex.quote(t)), timeout=300)
            result(rc == 0, "make has no target '%s': %s" % (t, out[-200:]), where)
    elif w == "mpirun":
        check_mpirun(args, where, run_it)
    elif w in TOOLS:
        check_tool(w, args, where, run_it)
    elif w == "ompi_info":
        cmd = "ompi_info " + " ".join(shlex.quote(a) for a in args)
        rc, out = sh(cmd, COMPONENT_ENV)
        result(rc == 0 and "MCA" in out, "'%s': rc %d: %s" % (cmd, rc, out[-300:]), where)
    elif w == "module":
        if len(args) >= 2 and args[0] == "load":
            result(os.path.isfile(os.path.join(T, "modulefiles", args[1] + ".lua.in")),
                   "no modulefile %s" % args[1], where)
        elif len(args) >= 2 and args[0] == "use":
            d = args[1].replace("PREFIX/share/", "")
            result(d in open(os.path.join(T, "Makefile.am")).read(),
                   "module use %s: not a folder make install fills" % args[1], where)
    elif w == "spack":
        if args[:2] == ["repo", "add"]:
            result(os.path.isfile(os.path.join(T, args[2], "repo.yaml")),
                   "no Spack repo at %s" % args[2],
                   where)
        elif args[:1] == ["install"]:
            recipe = os.path.join(T, "spack/packages", args[1], "package.py")
            text = open(recipe).read() if os.path.isfile(recipe) else ""
            result(bool(text), "no Spack package %s" % args[1], where)
            for a in args[2:]:
                v = re.match(r"^[+~](\w+)$|^(\w+)=", a)
                if v:
                    name = v.group(1) or v.group(2)
                    ok = ('variant("%s"' % name in text or
                          (name == "cuda_arch" and "CudaPackage" in text))
                    result(ok, "Spack package %s has no variant %s" % (args[1], name), where)
    elif w == "mpicc":
        pass   # the reader's program; the pkg-config part is checked above
    elif w == "pkg-config":
        result(os.path.isfile(os.path.join(T, args[-1] + ".pc.in")),
               "no pkg-config file %s" % args[-1],
               where)
    elif w == "man":
        page = args[-1]
        result(bool(glob.glob(os.path.join(T, "man", "man*", page + ".[0-9]"))),
               "no man page %s" % page,
               where)
    elif w == "grep":
        pass   # the right side of a pipe, run with its left side
    else:
        result(False, "no rule for the command '%s'" % w, where)


def split_words(cmd):
    try:
        return shlex.split(cmd, comments=True)
    except ValueError:
        return cmd.split()


def check_command(cmd, where, run_it=True):
    cmd = re.sub(r"\s+#\s.*$", "", cmd).strip()
    # the reader's own values: <Open MPI's component dir>, <coll>
    cmd = re.sub(r"<coll>", "allreduce", cmd)
    cmd = re.sub(r"<[^>]*>", "X", cmd)
    for m in re.findall(r"\$\(pkg-config ([^)]*)\)", cmd):
        pkg = m.split()[-1]
        result(os.path.isfile(os.path.join(T, pkg + ".pc.in")), "no pkg-config file %s" % pkg,
               where)
    cmd = re.sub(r"\$\(pkg-config [^)]*\)", "", cmd)
    # a pipe into grep that needs nothing but ompi_info is run as shown
    if re.match(r"^ompi_info( [^|]*)?\|\s*grep ", cmd):
        rc, out = sh(cmd, COMPONENT_ENV)
        result(rc == 0 and out.strip(), "'%s' found nothing: %s" % (cmd, out[-200:]), where)
        return
    for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", cmd):
        if part:
            check_simple(split_words(part), where, run_it)


def commands(path):
    """(line number, text) of the commands shown in one Markdown file."""
    out = []
    lines = open(os.path.join(T, path), encoding="utf-8").read().split("\n")
    fence = False
    prev_blank = True
    in_block = False
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if fence or (line.startswith("    ") and line.strip() and (prev_blank or in_block)):
            in_block = not fence
            prev_blank = False
            if path not in DIAGRAMS:
                out.append((n, line.strip()))
            continue
        in_block = False
        prev_blank = not line.strip()
        for m in re.finditer(r"`([^`\n]+)`", line):
            span = m.group(1).strip()
            first = span.split()[0] if span.split() else ""
            if first in TOOLS or first in ("mpirun", "ompi_info", "make", "spack", "mpicc", "man",
                                           "pkg-config", "module") or \
                    first.endswith("configure") or first.endswith(".sh") or \
                    (first in ("sh", "bash") and len(span.split()) > 1):
                out.append((n, span))
            elif re.match(r"^--(with|without|enable|disable)-", first):
                out.append((n, "configure " + span))   # a configure option named alone
    return out


def main():
    global COMPONENT_ENV, FILES
    FILES = set()
    for root, dirs, files in os.walk(T):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        FILES.update(files)
    default = sh("ompi_info --parsable --param mca base --level 9")[1]
    m = re.search(r"mca_base_component_path:value:(.*)", default)
    paths = [d for d in (m.group(1).strip('"') if m else "").split(":") if os.path.isdir(d)]
    COMPONENT_ENV = {"OMPI_MCA_mca_base_component_path":
                     ":".join(paths + [os.path.join(B, ".libs")]),
                     "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    os.environ.update(COMPONENT_ENV)
    for doc in DOCS:
        text = open(os.path.join(T, doc), encoding="utf-8").read()
        for n, cmd in commands(doc):
            check_command(cmd, "%s:%d: %s" % (doc, n, cmd))
        # every MCA parameter of ours named anywhere in the text
        for n, line in enumerate(text.split("\n"), 1):
            for p in re.findall(r"(?<![\w/])((?:coll|op)_gpu_[a-z0-9_]+)(?![\w(]|\.[ch]\b)", line):
                result(p in mca_params(), "%s is not an MCA parameter ompi_info lists" % p,
                       "%s:%d" % (doc, n))
            for p in re.findall(r"--mca (\S+)", line):
                p = p.strip("`,.;:)")
                if p.isupper():   # the guide's placeholder (--mca NAME VALUE)
                    continue
                result(p in mca_params(), "--mca %s: no such MCA parameter or framework" % p,
                       "%s:%d" % (doc, n))
            # relative links resolve
            for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", line):
                if re.match(r"^[a-z]+:", link):
                    continue
                target = os.path.normpath(os.path.join(T, os.path.dirname(doc), link))
                result(os.path.exists(target), "link %s: no such file" % link, "%s:%d" % (doc, n))
    # the man pages name MCA parameters too
    for page in sorted(glob.glob(os.path.join(T, "man", "man*", "*.[0-9]"))):
        for n, line in enumerate(open(page, encoding="utf-8").read().split("\n"), 1):
            for p in re.findall(r"(?<![\w/])((?:coll|op)_gpu_[a-z0-9_]+)(?![\w(]|\.[ch]\b)", line):
                result(p in mca_params(), "%s is not an MCA parameter ompi_info lists" % p,
                       "%s:%d" % (os.path.relpath(page, T), n))
    # the README's test command is what CI runs
    readme = open(os.path.join(T, "README.md"), encoding="utf-8").read()
    ci = open(os.path.join(T, ".ci/run"), encoding="utf-8").read() if os.path.exists(
        os.path.join(T, ".ci/run")) else None
    if ci is not None:
        m = re.search(r"^TEST_CMD='(.*)'$", ci, re.M)
        shown = re.search(r"^    (\./autogen\.sh .*make check)$", readme, re.M)
        result(bool(m and shown) and m.group(1).replace(" >/dev/null", "") == shown.group(1),
               "the README's test command is not the one .ci/run runs", "README.md")
    print("%d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
