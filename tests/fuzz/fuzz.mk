# tests/fuzz/fuzz.mk — libFuzzer targets, built by `make fuzz` (make -f tests/fuzz/fuzz.mk FUZZ_CC=clang).
#
# Every tests/fuzz/fuzz_*.c becomes build-fuzz/fuzz_* with -fsanitize=fuzzer,address,undefined. The project's
# parsers (preprocess/, preprocess/text/ and weights/, no CUDA, no cli/) are compiled with the same flags into an
# archive, so each target links only the objects it uses. Run a target as in tests/fuzz/README.md.

FUZZ_CC    ?= clang
FUZZ_BUILD ?= build-fuzz
FUZZ_SAN   := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -std=c11 -g -O1 -fno-omit-frame-pointer -I. -I/usr/include/stb -D_GNU_SOURCE -pthread \
               $(if $(DEPS_PREFIX),-I$(DEPS_PREFIX)/include -I$(DEPS_PREFIX)/include/stb)
# The library objects get fuzzer-no-link: coverage instrumentation without a second main().
FUZZ_LIB_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
FUZZ_LDLIBS := $(if $(DEPS_PREFIX),-L$(DEPS_PREFIX)/lib) -l:libturbojpeg.a -lcjson -lm -lpthread

FUZZ_LIB_SRC := $(wildcard preprocess/*.c preprocess/text/*.c weights/*.c)
FUZZ_LIB_OBJ := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_LIB_SRC))
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN     := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRC))

.PHONY: all
all: $(FUZZ_BIN)

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_LIB_SAN) -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/libfuzzparsers.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/libfuzzparsers.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) $< $(FUZZ_BUILD)/libfuzzparsers.a $(FUZZ_LDLIBS) -o $@

-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)
