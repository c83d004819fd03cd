# Spack recipe for coll/gpu.  Use it as a repository:
#   spack repo add ./spack && spack install gpucoll cuda_arch=90 +ucx ^openmpi@5.0
# (or ^openmpi@4.1)
# test/spack/check_recipe.py keeps it in step with configure.ac (CI).

from spack.package import *


class Gpucoll(AutotoolsPackage, CudaPackage):
    """coll/gpu: an Open MPI coll component (4.1.x and 5.0.x) that runs MPI
    collectives on CUDA device buffers as GPU kernels over CUDA IPC/NVLink."""

    homepage = "https://github.com/gpucoll/gpucoll"
    git = "https://github.com/gpucoll/gpucoll.git"

    maintainers("gpucoll")
    license("BSD-3-Clause")

    version("main", branch="main")
    version("0.1.0", tag="v0.1.0")

    variant("ucx", default=True, description="Build the UCX inter-node transport")
    variant("hwloc", default=True, description="Use hwloc for topology discovery")
    variant("nvtx", default=True, description="NVTX ranges around collectives")

    # a CUDA architecture is needed: the kernels are compiled for it
    conflicts("~cuda", msg="coll/gpu is a CUDA component")
    conflicts("cuda_arch=none", when="+cuda", msg="give cuda_arch=<sm> (e.g. 90 for H100/H200)")

    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("m4", type="build")
    # one source tree for both series: configure reads the release from the
    # headers and picks its coll framework interface (4.1: coll 2.0 with
    # module 2.3; 5.0: 2.4); older and newer series are refused there
    depends_on("openmpi@4.1:5.0", type=("build", "link", "run"))
    depends_on("cuda@11.8:", type=("build", "link", "run"))
    depends_on("hwloc@2:", when="+hwloc")
    depends_on("ucx@1.13:", when="+ucx")

    def autoreconf(self, spec, prefix):
        Executable("./autogen.sh")()

    def configure_args(self):
        spec = self.spec
        args = [
            "--with-ompi={0}".format(spec["openmpi"].prefix),
            "--with-cuda={0}".format(spec["cuda"].prefix),
        ]
        archs = spec.variants["cuda_arch"].value
        gencode = " ".join(
            "-gencode=arch=compute_{0},code=sm_{0}".format(a) for a in archs if a != "none"
        )
        args.append("--with-nvcc-gencode={0}".format(gencode))
        if "+ucx" in spec:
            args.append("--with-ucx={0}".format(spec["ucx"].prefix))
        else:
            args.append("--without-ucx")
        if "+hwloc" in spec:
            args.append("--with-hwloc={0}".format(spec["hwloc"].prefix))
        else:
            args.append("--without-hwloc")
        args.extend(self.enable_or_disable("nvtx"))
        return args

    def setup_run_environment(self, env):
        # Open MPI searches its default folder only while the variable is
        # unset; the modulefiles installed under share/ handle that case
        env.append_path("OMPI_MCA_mca_base_component_path", self.prefix.lib.openmpi)
