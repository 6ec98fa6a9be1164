# libgpuwatch_cupti.so, the CUPTI injection library loaded by the CUDA
# driver through CUDA_INJECTION64_PATH.  Included from the top-level
# CMakeLists.txt.
#
#   GW_CUPTI       AUTO (default): build when the CUPTI headers are found
#                  (next to nvcc, in CUDA_HOME or /usr/local/cuda), else
#                  say so once; ON: missing headers are an error; OFF: skip.
#   GW_HAVE_CUPTI  result: ON when the target gpuwatch_cupti exists.
#
# Only the headers are needed: the library loads libcupti by its SONAME at
# run time, so one build serves CUDA 12 and 13.

set(GW_CUPTI AUTO CACHE STRING "Build libgpuwatch_cupti.so: AUTO, ON or OFF")
set_property(CACHE GW_CUPTI PROPERTY STRINGS AUTO ON OFF)
set(GW_HAVE_CUPTI OFF)

if(NOT GW_CUPTI STREQUAL "OFF")
	find_program(GW_NVCC nvcc PATHS /usr/local/cuda/bin)
	set(_gw_cuda_hints "")
	if(GW_NVCC)
		get_filename_component(_gw_nvcc_dir ${GW_NVCC} DIRECTORY)
		list(APPEND _gw_cuda_hints ${_gw_nvcc_dir}/..)
	endif()
	if(DEFINED ENV{CUDA_HOME})
		list(APPEND _gw_cuda_hints $ENV{CUDA_HOME})
	endif()
	list(APPEND _gw_cuda_hints /usr/local/cuda)
	find_path(GW_CUPTI_INCLUDE_DIR cupti.h
		HINTS ${_gw_cuda_hints}
		PATH_SUFFIXES include extras/CUPTI/include targets/x86_64-linux/include)
	find_path(GW_CUDA_INCLUDE_DIR cuda.h
		HINTS ${_gw_cuda_hints} PATH_SUFFIXES include targets/x86_64-linux/include)
	if(GW_CUPTI_INCLUDE_DIR AND GW_CUDA_INCLUDE_DIR)
		set(GW_HAVE_CUPTI ON)
	elseif(GW_CUPTI STREQUAL "ON")
		message(FATAL_ERROR "GW_CUPTI=ON but cupti.h/cuda.h were not found "
			"(install the CUDA toolkit or set CUDA_HOME)")
	else()
		message(STATUS "CUPTI headers not found: libgpuwatch_cupti.so "
			"is not built (install the CUDA toolkit or set CUDA_HOME)")
	endif()
endif()

if(GW_HAVE_CUPTI)
	add_library(gpuwatch_cupti SHARED
		src/inject/inject.c
		src/inject/agg.c
		src/inject/ring.c)
	target_include_directories(gpuwatch_cupti PRIVATE
		src include ${GW_CUPTI_INCLUDE_DIR} ${GW_CUDA_INCLUDE_DIR})
	target_link_libraries(gpuwatch_cupti PRIVATE Threads::Threads
		${CMAKE_DL_LIBS})
	target_link_options(gpuwatch_cupti PRIVATE
		-Wl,--version-script=${PROJECT_SOURCE_DIR}/src/inject/gpuwatch_cupti.map
		-Wl,-z,defs -Wl,-z,now -Wl,-z,relro)
	set_target_properties(gpuwatch_cupti PROPERTIES
		C_VISIBILITY_PRESET hidden
		LINK_DEPENDS ${PROJECT_SOURCE_DIR}/src/inject/gpuwatch_cupti.map
		LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
	message(STATUS "CUPTI headers in ${GW_CUPTI_INCLUDE_DIR}: "
		"building libgpuwatch_cupti.so")
endif()
