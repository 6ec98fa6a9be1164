# eBPF probes on the CUDA libraries: the BPF object, its skeleton and the
# loader library `gw_bpf`.  Included from the top-level CMakeLists.txt.
#
#   GW_BPF       AUTO (default): build when clang, bpftool, libbpf, libelf
#                and zlib are all found, else say what is missing once;
#                ON: the same, but missing pieces are an error; OFF: skip.
#   GW_HAVE_BPF  result: ON when the target gw_bpf exists.
#
# Build steps: clang -target bpf compiles cuda.bpf.c (CO-RE, against the
# checked-in vmlinux.h) to cuda.bpf.o; `bpftool gen skeleton` turns it
# into cuda.skel.h; probes.c and probes_read.c include that and, with
# probes_api.c and probes_elf.c, become libgw_bpf.a.

set(GW_BPF AUTO CACHE STRING "Build the eBPF probes: AUTO, ON or OFF")
set_property(CACHE GW_BPF PROPERTY STRINGS AUTO ON OFF)
set(GW_HAVE_BPF OFF)

set(_gw_bpf_src ${CMAKE_CURRENT_LIST_DIR})
set(_gw_bpf_out ${CMAKE_BINARY_DIR}/src/collect/bpf)

if(NOT GW_BPF STREQUAL "OFF")
	set(_gw_bpf_missing "")
	find_program(GW_BPF_CLANG NAMES clang clang-19 clang-18 clang-17
		clang-16 clang-15 clang-14)
	find_program(GW_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin
		/usr/local/sbin)
	find_package(PkgConfig QUIET)
	if(PKG_CONFIG_FOUND)
		pkg_check_modules(GW_LIBBPF QUIET IMPORTED_TARGET libbpf>=1.0)
		pkg_check_modules(GW_LIBELF QUIET IMPORTED_TARGET libelf)
		pkg_check_modules(GW_LIBDW QUIET IMPORTED_TARGET libdw)
		pkg_check_modules(GW_ZLIB QUIET IMPORTED_TARGET zlib)
	endif()
	if(NOT GW_BPF_CLANG)
		list(APPEND _gw_bpf_missing "clang")
	endif()
	if(NOT GW_BPFTOOL)
		list(APPEND _gw_bpf_missing "bpftool")
	endif()
	if(NOT GW_LIBBPF_FOUND)
		list(APPEND _gw_bpf_missing "libbpf >= 1.0 (libbpf-dev)")
	endif()
	if(NOT GW_LIBELF_FOUND)
		list(APPEND _gw_bpf_missing "libelf (libelf-dev)")
	endif()
	if(NOT GW_LIBDW_FOUND)
		list(APPEND _gw_bpf_missing "libdw (libdw-dev)")
	endif()
	if(NOT GW_ZLIB_FOUND)
		list(APPEND _gw_bpf_missing "zlib (zlib1g-dev)")
	endif()
	if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
		list(APPEND _gw_bpf_missing
			"an x86-64 target (got ${CMAKE_SYSTEM_PROCESSOR})")
	endif()

	if(_gw_bpf_missing)
		list(JOIN _gw_bpf_missing ", " _gw_bpf_missing)
		if(GW_BPF STREQUAL "ON")
			message(FATAL_ERROR
				"GW_BPF=ON but eBPF probes need: ${_gw_bpf_missing}")
		endif()
		message(STATUS "eBPF probes disabled, missing: ${_gw_bpf_missing}")
	else()
		set(GW_HAVE_BPF ON)
	endif()
endif()

if(GW_HAVE_BPF)
	# libbpf's headers for the BPF side (bpf_helpers.h, ...).
	set(_gw_bpf_inc "")
	foreach(dir ${GW_LIBBPF_INCLUDE_DIRS})
		list(APPEND _gw_bpf_inc "-I${dir}")
	endforeach()

	file(MAKE_DIRECTORY ${_gw_bpf_out})
	add_custom_command(
		OUTPUT ${_gw_bpf_out}/cuda.bpf.o
		COMMAND ${GW_BPF_CLANG} -O2 -g -target bpf -mcpu=v3
			-D__TARGET_ARCH_x86 -Wall
			-I${_gw_bpf_src} -I${_gw_bpf_out} ${_gw_bpf_inc}
			-c ${_gw_bpf_src}/cuda.bpf.c -o ${_gw_bpf_out}/cuda.bpf.o
		DEPENDS ${_gw_bpf_src}/cuda.bpf.c ${_gw_bpf_src}/cuda_bpf.h
			${_gw_bpf_src}/vmlinux.h
		COMMENT "Compiling BPF object cuda.bpf.o"
		VERBATIM)
	add_custom_command(
		OUTPUT ${_gw_bpf_out}/cuda.skel.h
		COMMAND sh -c "\"$0\" gen skeleton \"$1\" name cuda_bpf > \"$2\""
			${GW_BPFTOOL} ${_gw_bpf_out}/cuda.bpf.o
			${_gw_bpf_out}/cuda.skel.h.tmp
		COMMAND ${CMAKE_COMMAND} -E rename ${_gw_bpf_out}/cuda.skel.h.tmp
			${_gw_bpf_out}/cuda.skel.h
		DEPENDS ${_gw_bpf_out}/cuda.bpf.o
		COMMENT "Generating BPF skeleton cuda.skel.h"
		VERBATIM)
	# The CPU profiler's program (profile.bpf.c), the same way.
	add_custom_command(
		OUTPUT ${_gw_bpf_out}/profile.bpf.o
		COMMAND ${GW_BPF_CLANG} -O2 -g -target bpf -mcpu=v3
			-D__TARGET_ARCH_x86 -Wall
			-I${_gw_bpf_src} -I${_gw_bpf_out} ${_gw_bpf_inc}
			-c ${_gw_bpf_src}/profile.bpf.c
			-o ${_gw_bpf_out}/profile.bpf.o
		DEPENDS ${_gw_bpf_src}/profile.bpf.c
			${_gw_bpf_src}/profile_bpf.h ${_gw_bpf_src}/vmlinux.h
		COMMENT "Compiling BPF object profile.bpf.o"
		VERBATIM)
	add_custom_command(
		OUTPUT ${_gw_bpf_out}/profile.skel.h
		COMMAND sh -c "\"$0\" gen skeleton \"$1\" name profile_bpf > \"$2\""
			${GW_BPFTOOL} ${_gw_bpf_out}/profile.bpf.o
			${_gw_bpf_out}/profile.skel.h.tmp
		COMMAND ${CMAKE_COMMAND} -E rename
			${_gw_bpf_out}/profile.skel.h.tmp
			${_gw_bpf_out}/profile.skel.h
		DEPENDS ${_gw_bpf_out}/profile.bpf.o
		COMMENT "Generating BPF skeleton profile.skel.h"
		VERBATIM)
	add_custom_target(gw_bpf_skel DEPENDS ${_gw_bpf_out}/cuda.skel.h
		${_gw_bpf_out}/profile.skel.h)

	add_library(gw_bpf STATIC ${_gw_bpf_src}/probes.c
		${_gw_bpf_src}/probes_api.c ${_gw_bpf_src}/probes_elf.c
		${_gw_bpf_src}/probes_read.c ${_gw_bpf_out}/cuda.skel.h
		${_gw_bpf_src}/profiler.c ${_gw_bpf_src}/symbols.c
		${_gw_bpf_src}/unwind.c
		${_gw_bpf_out}/profile.skel.h)
	if(GW_IBERTY_INCLUDE_DIR AND GW_IBERTY_LIB)
		target_compile_definitions(gw_bpf PRIVATE GW_HAVE_DEMANGLE=1)
		target_link_libraries(gw_bpf PUBLIC ${GW_IBERTY_LIB})
	endif()
	add_dependencies(gw_bpf gw_bpf_skel)
	# The collect layer's view of the tree (src/CMakeLists.txt).
	target_include_directories(gw_bpf PRIVATE ${CMAKE_BINARY_DIR}/layers/collect)
	target_include_directories(gw_bpf PRIVATE ${_gw_bpf_src})
	# The generated skeleton is not ours to warn about.
	target_include_directories(gw_bpf SYSTEM PRIVATE ${_gw_bpf_out})
	target_compile_definitions(gw_bpf PUBLIC GW_HAVE_BPF=1)
	target_link_libraries(gw_bpf PUBLIC PkgConfig::GW_LIBBPF
		PkgConfig::GW_LIBELF PkgConfig::GW_LIBDW PkgConfig::GW_ZLIB)
endif()
