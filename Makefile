# Makefile — the one build file of siglip2-embed.
#
#   make deps     install build and test dependencies with apt-get (idempotent; needs root or sudo)
#   make          build ./siglip2-embed (with the CUDA backends when nvcc is found)
#   make test     build and run every test; ends with "N passed, N failed"
#   make asan     the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (CPU build)
#   make fuzz     build the libFuzzer targets with clang (see tests/fuzz/)
#   make clean
#
# Sources are found by folder, so adding a file needs no edit here:
#   weights/ preprocess/ preprocess/text/ kernel/ kernel/cpu/ kernel/mega/ cli/
#                                                    C, into build/libsiglip2.a (cli/main.c is the program)
#   kernel/cuda/*.cu                                 portable CUDA: sm_80 + sm_90 + sm_100 code, compute_80 PTX
#   kernel/mega/*.cu                                 the megakernels' shared host side: host code, compiled as
#                                                    kernel/cuda/*.cu (it is part of the portable backend's link)
#   kernel/sm90/*.cu                                 Hopper megakernel: sm_90a only
#   kernel/sm100/*.cu                                Blackwell megakernel: sm_100a only
#   kernel/lab/*.c, kernel/lab/sm90_*.cu, sm100_*.cu lab and experiment kernels (sm_90a / sm_100a by name prefix),
#                                                    into build/liblab.a, never linked into siglip2-embed (in a
#                                                    build without CUDA: kernel/lab/lab_no_gpu.c's refusing stubs)
#   tests/test_*.c                                   one test program each, linked against the library
#   kernel/lab/test_*.c                              the lab's tests: build/tests/test_*, linked against liblab.a
#                                                    and the library
#   tests/tools/*.c                                  helper programs the script tests call
# Objects go to $(BUILD)/ (build/ by default; build-asan/ for the sanitizer build).

CC        ?= gcc
BUILD     ?= build
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
WITH_CUDA ?= $(if $(NVCC),1,0)
SAN       ?= 0

# Optimisation: the CPU reference relies on auto-vectorisation (x86-64-v3 paths are picked at run time
# through target_clones where it matters), so -O3; the sanitizer build uses -O1.
ifeq ($(SAN),1)
OPT      := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
else
OPT      := -O3 -g
endif

# DEPS_PREFIX: a folder with include/ and lib/ holding the Debian libraries' headers and archives, for
# building on a machine where they cannot be installed (scripts/pack-build-deps.sh makes one).
DEPS_PREFIX ?=
CPPFLAGS := -I. $(if $(DEPS_PREFIX),-I$(DEPS_PREFIX)/include -I$(DEPS_PREFIX)/include/stb) -I/usr/include/stb -D_GNU_SOURCE
# -Wno-format-truncation: error messages are written with snprintf into fixed buffers and may be cut on
# purpose; gcc cannot tell that from a bug.
CFLAGS   := -std=c11 -Wall -Wextra -Werror -Wno-format-truncation -fopenmp -pthread $(OPT)
# libturbojpeg is linked statically so the binary travels to machines without it; libcjson is found beside
# the binary first ($ORIGIN), then in the system.
LDLIBS   := -l:libturbojpeg.a -lcjson -lm -lpthread -ldl -lrt
comma    := ,
LDFLAGS  := -fopenmp -Wl,-rpath,'$$ORIGIN' $(filter -fsanitize=%,$(OPT)) \
            $(if $(DEPS_PREFIX),-L$(DEPS_PREFIX)/lib -Wl$(comma)-rpath$(comma)$(abspath $(DEPS_PREFIX))/lib)

LIB_DIRS := weights preprocess preprocess/text kernel kernel/cpu kernel/mega cli
LIB_SRC  := $(filter-out cli/main.c kernel/no_gpu.c,$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))

ifeq ($(WITH_CUDA),1)
CU_PORTABLE := $(wildcard kernel/cuda/*.cu) $(wildcard kernel/mega/*.cu)
CU_SM90     := $(wildcard kernel/sm90/*.cu)
CU_SM100    := $(wildcard kernel/sm100/*.cu)
CU_SRC      := $(CU_PORTABLE) $(CU_SM90) $(CU_SM100)
NVCCFLAGS   := -std=c++17 -O3 -g -lineinfo -I. -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings \
               --expt-relaxed-constexpr
GENCODE_PORTABLE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
                    -gencode arch=compute_100,code=sm_100 -gencode arch=compute_80,code=compute_80
GENCODE_SM90     := -gencode arch=compute_90a,code=sm_90a
GENCODE_SM100    := -gencode arch=compute_100a,code=sm_100a
LDLIBS      += -L$(CUDA_HOME)/lib64 -lcudart_static -lcublasLt -lstdc++ -Wl,-rpath,$(CUDA_HOME)/lib64
else
LIB_SRC     += kernel/no_gpu.c
CU_SRC      :=
endif

LIB_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRC)) $(patsubst %.cu,$(BUILD)/%.cu.o,$(CU_SRC))
LIB      := $(BUILD)/libsiglip2.a
BIN      := $(if $(filter build,$(BUILD)),siglip2-embed,$(BUILD)/siglip2-embed)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))

# The lab (kernel/lab/lab.h): its own archive, linked only into its tests.
LAB_TEST_SRC := $(wildcard kernel/lab/test_*.c)
LAB_TEST_BIN := $(patsubst kernel/lab/%.c,$(BUILD)/tests/%,$(LAB_TEST_SRC))
ifeq ($(WITH_CUDA),1)
LAB_SRC  := $(filter-out $(LAB_TEST_SRC) kernel/lab/lab_no_gpu.c,$(wildcard kernel/lab/*.c)) $(wildcard kernel/lab/*.cu)
else
LAB_SRC  := kernel/lab/lab_no_gpu.c
endif
LAB_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(filter %.c,$(LAB_SRC))) $(patsubst %.cu,$(BUILD)/%.cu.o,$(filter %.cu,$(LAB_SRC)))
LAB      := $(BUILD)/liblab.a
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRC))

.PHONY: all deps test asan fuzz clean
# Keep the test programs' objects: they are intermediates of a pattern chain, which make would otherwise delete
# after the run (printing after the test summary) and rebuild every time.
.SECONDARY:
all: $(BIN) $(TEST_BIN) $(LAB_TEST_BIN) $(TOOL_BIN)

# Debian packages: the C libraries, the test consumers (numpy, faiss) for /usr/bin/python3, and clang for
# the fuzzer. The CUDA toolkit is not a Debian package we can rely on: when nvcc is absent the build is
# CPU-only and says so. With nvcc but no cuobjdump outside .deps/ (scripts/lib-sass.sh's lookup),
# scripts/get-sass-tools.sh (idempotent) fetches cuobjdump + nvdisasm from NVIDIA's PyPI wheels into
# .deps/cuda-tools for the SASS checks of `make test` (build-time only); if that fails, deps prints a WARNING
# and still succeeds, and those checks SKIP.
DEB_PKGS := build-essential libstb-dev libcjson-dev libturbojpeg0-dev python3 python3-numpy python3-faiss
deps:
	@missing=$$(for p in $(DEB_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
	    grep -q '^install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all installed"; else \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; fi
	@if [ -n "$(NVCC)" ]; then echo "deps: CUDA toolkit found: $(NVCC)"; \
	 else echo "deps: no CUDA toolkit (nvcc) found: building the CPU backend only"; fi
	@if [ -n "$(NVCC)" ]; then \
	    tool=$$(CUDA_HOME='$(CUDA_HOME)' bash -c '. scripts/lib-sass.sh && sg_find_cuobjdump && echo "$$CUOBJDUMP"'); \
	    if [ -n "$$tool" ] && [ "$$tool" != "$(CURDIR)/.deps/cuda-tools/bin/cuobjdump" ]; then \
	        echo "deps: cuobjdump found: $$tool"; \
	    elif ! bash scripts/get-sass-tools.sh; then \
	        echo "deps: WARNING: scripts/get-sass-tools.sh failed: no cuobjdump, the SASS checks in make test will SKIP"; \
	    fi; fi

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# CUDA objects: one rule; the gencode is chosen by folder (and, in kernel/lab, by the file name's prefix).
$(BUILD)/kernel/cuda/%.cu.o $(BUILD)/kernel/mega/%.cu.o: GENCODE = $(GENCODE_PORTABLE)
$(BUILD)/kernel/sm90/%.cu.o $(BUILD)/kernel/lab/sm90_%.cu.o: GENCODE = $(GENCODE_SM90)
$(BUILD)/kernel/sm100/%.cu.o $(BUILD)/kernel/lab/sm100_%.cu.o: GENCODE = $(GENCODE_SM100)
$(BUILD)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(GENCODE) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
$(LAB): $(LAB_OBJ)
$(LIB) $(LAB):
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN): $(BUILD)/cli/main.o $(LIB)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(LAB_TEST_BIN): $(BUILD)/tests/%: $(BUILD)/kernel/lab/%.o $(LAB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/tools/%: $(BUILD)/tests/tools/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

test: all
	@bash tests/run.sh $(BUILD) $(BIN)

asan:
	$(MAKE) BUILD=build-asan SAN=1 WITH_CUDA=0 test

FUZZ_CC ?= clang
fuzz:
	$(MAKE) -f tests/fuzz/fuzz.mk FUZZ_CC=$(FUZZ_CC)

clean:
	rm -rf build build-asan build-fuzz siglip2-embed

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
