# anelm_module(NAME DIR DEPS ...): a static library anelm_NAME from src/DIR/*.cpp.
# A folder with no sources yet becomes an interface library, so the graph of
# modules stays the same while a folder is being filled in.
function(anelm_module name dir)
  cmake_parse_arguments(M "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${dir}/*.cpp)
  if(srcs)
    add_library(anelm_${name} STATIC ${srcs})
    target_include_directories(anelm_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(anelm_${name} PUBLIC ${M_DEPS})
  else()
    add_library(anelm_${name} INTERFACE)
    target_include_directories(anelm_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(anelm_${name} INTERFACE ${M_DEPS})
  endif()
endfunction()

# The CPU kernels: portable code plus one folder per instruction set, each
# compiled with its own flags and chosen at run time.
function(anelm_kernels_module)
  set(dir ${PROJECT_SOURCE_DIR}/src/kernels)
  file(GLOB srcs CONFIGURE_DEPENDS ${dir}/*.cpp)
  set(defs "")
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
    file(GLOB x86_srcs CONFIGURE_DEPENDS ${dir}/x86/*.cpp)
    set_source_files_properties(${x86_srcs} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    list(APPEND srcs ${x86_srcs})
    # AVX-512 leaves (F, BW, VL, DQ), used only where the processor has them.
    file(GLOB x86_512_srcs CONFIGURE_DEPENDS ${dir}/x86_512/*.cpp)
    set_source_files_properties(${x86_512_srcs} PROPERTIES COMPILE_OPTIONS
      "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx2;-mfma;-mf16c")
    # The quantized leaves also look up bytes with VBMI and sum bytes with VNNI
    # (quant_matmul.cpp checks).
    set_property(SOURCE ${dir}/x86_512/quant_avx512.cpp ${dir}/x86_512/int8_dot_avx512.cpp
      APPEND PROPERTY COMPILE_OPTIONS "-mavx512vbmi;-mavx512vnni")
    list(APPEND srcs ${x86_512_srcs})
    list(APPEND defs ANELM_HAVE_X86_KERNELS=1)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64|ARM64")
    file(GLOB arm_srcs CONFIGURE_DEPENDS ${dir}/arm/*.cpp)
    list(APPEND srcs ${arm_srcs})
    list(APPEND defs ANELM_HAVE_ARM_KERNELS=1)
  endif()
  if(NOT srcs)
    anelm_module(kernels kernels DEPS anelm_base)
    return()
  endif()
  add_library(anelm_kernels STATIC ${srcs})
  target_include_directories(anelm_kernels PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(anelm_kernels PRIVATE ${defs})
  target_link_libraries(anelm_kernels PUBLIC anelm_base)
endfunction()

# anelm_tests(NAME DIR DEPS ...): one gtest program test_NAME from tests/DIR/*_test.cpp.
function(anelm_tests name dir)
  cmake_parse_arguments(T "" "" "DEPS;LABELS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${dir}/*_test.cpp)
  if(NOT srcs)
    return()
  endif()
  add_executable(test_${name} ${srcs})
  target_include_directories(test_${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_${name} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(test_${name} PRIVATE
    ANELM_SOURCE_DIR="${PROJECT_SOURCE_DIR}" ANELM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  gtest_discover_tests(test_${name} DISCOVERY_MODE PRE_TEST PROPERTIES LABELS "${T_LABELS}")
endfunction()
