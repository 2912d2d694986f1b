# -*- Python -*-
# lit configuration for zbc: runs every .mlir test under test/ with zbc-opt,
# zbc and the LLVM testing tools (FileCheck, not, count) on the PATH.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ZBC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
# fuzz/ holds fuzzer seeds and reproducers (run by fuzz.py under ctest), not lit tests.
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "fuzz"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.zbc_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%examples", config.zbc_examples_dir))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# Tools are looked up in zbc's bin/ first, then LLVM's.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.zbc_tools_dir, config.llvm_tools_dir]
tools = ["zbc-opt", "zbc", "zbc-dsl-gpt", "zbc-dsl-llama", "zbc-dsl-mlp",
         "zbc-reference", "zbc-gradients", "zbc-bench-schedules",
         "zbc-bench-verify", "zbc-bench-gpt-layer-kernels", "mlir-translate"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The CUDA backend's tests need a build with nvcc and NCCL (no GPU).
if getattr(config, "enable_cuda", False):
    config.available_features.add("cuda")
    llvm_config.add_tool_substitutions(["zbc-cuda-kernel-check"], tool_dirs)
