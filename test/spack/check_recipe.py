#!/usr/bin/env python3
"""The Spack recipe must compile and agree with the build it describes.

Spack itself is not installed here, so the recipe is compiled with
python3 and read with ast: its versions must include configure.ac's
AC_INIT version, every --with-X / --enable-X it passes must be an option
configure really has, every variant must reach configure, and every
optional configure package must be a variant or a dependency.  Prints
"N passed, N failed"; exits non-zero on any failure.
"""
import ast
import glob
import os
import py_compile
import re
import sys

root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
recipe = os.path.join(root, "spack", "packages", "gpucoll", "package.py")
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL", what)


py_compile.compile(recipe, doraise=True)
check(True, "recipe compiles")
tree = ast.parse(open(recipe).read())

calls = {}
for node in ast.walk(tree):
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        args = [a.value for a in node.args if isinstance(a, ast.Constant)]
        calls.setdefault(name, []).append(args)
versions = [a[0] for a in calls.get("version", []) if a]
variants = [a[0] for a in calls.get("variant", []) if a]
depends = [a[0] for a in calls.get("depends_on", []) if a]
strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]

configure = open(os.path.join(root, "configure.ac")).read()
m4 = configure + "".join(open(f).read() for f in glob.glob(os.path.join(root, "config", "gpucoll_*.m4")))
version = re.search(r"AC_INIT\(\[[^\]]*\],\s*\[([^\]]+)\]", configure).group(1)
with_opts = set(re.findall(r"AC_ARG_WITH\(\[([\w-]+)\]", m4))
enable_opts = set(re.findall(r"AC_ARG_ENABLE\(\[([\w-]+)\]", m4))

check(version in versions, "recipe has configure.ac's version %s (has %s)" % (version, versions))
passed_opts = set()
for s in strings:
    for kind, name in re.findall(r"--(with|without|enable|disable)-([\w-]+)", s):
        passed_opts.add(name)
        known = with_opts if kind in ("with", "without") else enable_opts
        check(name in known, "recipe passes --%s-%s, which configure does not have" % (kind, name))
# enable_or_disable("x") produces --enable-x/--disable-x for a variant
for args in calls.get("enable_or_disable", []) + calls.get("with_or_without", []):
    if args:
        passed_opts.add(args[0])
        check(args[0] in enable_opts | with_opts, "variant %s has no configure option" % args[0])
for v in variants:
    check(v in passed_opts, "variant %s never reaches configure" % v)
for opt in with_opts:
    if opt in ("ompi-component-dir",):   # a site choice, not a dependency
        continue
    dep = {"ompi": "openmpi"}.get(opt, opt.split("-")[0])
    check(opt in passed_opts or opt.startswith("nvcc"),
          "configure option --with-%s is not set by the recipe" % opt)
    if opt != "nvcc-gencode":
        check(any(d.startswith(dep) for d in depends), "no depends_on for --with-%s (%s)" % (opt, dep))
check("ucx" in variants and "hwloc" in variants, "ucx and hwloc are variants")
# the Open MPI range is the set of release series configure accepts
series = sorted(int(x) for x in re.findall(r"\[(\d{3})\], \[ompi_coll_check=", m4))
want = "openmpi@%d.%d:%d.%d" % (series[0] // 100, series[0] % 100, series[-1] // 100,
                                 series[-1] % 100) if series else "?"
check(want in depends, "recipe's Open MPI range is configure's series %s (has %s)"
      % (want, [d for d in depends if d.startswith("openmpi")]))
check(any("cuda_arch" in s for s in strings), "cuda_arch feeds --with-nvcc-gencode")
print("check_recipe: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
