"""Builds cohort's compiled parts with CMake and puts them into the package:
the extension modules (cohort/_*.so), libcohort.so beside them (found through
their $ORIGIN run path) and the launcher as cohort/bin/cohort. Metadata is in
pyproject.toml. COHORT_BUILD_DIR names an existing CMake build to reuse;
otherwise one is configured in build/ (Release, without the tests)."""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
TARGETS = ["cohort_cli", "cohort", "cohort_py_runtime", "cohort_py_data", "cohort_py_checkpoint",
           "cohort_py_track", "cohort_py_sweep"]


def cmake_build():
    build = os.environ.get("COHORT_BUILD_DIR") or os.path.join(ROOT, "build")
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja",
                               "-DCMAKE_BUILD_TYPE=Release", "-DCOHORT_BUILD_TESTS=OFF"])
    subprocess.check_call(["cmake", "--build", build, "-j", str(os.cpu_count() or 1),
                           "--target", *TARGETS])
    # The torch.distributed backend exists only where CMake found torch.
    subprocess.call(["cmake", "--build", build, "--target", "cohort_py_c10d"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return build


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        build = cmake_build()
        package = os.path.join(self.build_lib, "cohort")
        for module in glob.glob(os.path.join(build, "python", "cohort", "_*.so")):
            shutil.copy2(module, package)
        shutil.copy2(os.path.join(build, "libcohort.so"), package)
        os.makedirs(os.path.join(package, "bin"), exist_ok=True)
        shutil.copy2(os.path.join(build, "cohort"), os.path.join(package, "bin", "cohort"))


class BinaryDistribution(Distribution):
    """The wheel holds compiled code: tag it for this platform and Python."""

    def has_ext_modules(self):
        return True


# setuptools' own scratch folder stays out of CMake's build/ (and out of git).
setup(cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution,
      options={"build": {"build_base": "build-pip"}, "egg_info": {"egg_base": "build-pip"}})
