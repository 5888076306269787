# anelm_proto_sources(TARGET src-relative .proto files...): compiles each with
# protoc at build time into build/gen/<same path>.pb.{h,cc} and adds the C++
# to TARGET. Imports are written relative to src/ ("coreml/proto/mil.proto").
function(anelm_proto_sources target)
  set(out_dir ${PROJECT_BINARY_DIR}/gen)
  foreach(proto ${ARGN})
    string(REGEX REPLACE "\\.proto$" "" stem ${proto})
    set(outputs ${out_dir}/${stem}.pb.h ${out_dir}/${stem}.pb.cc)
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
      COMMAND protobuf::protoc --cpp_out=${out_dir} -I ${PROJECT_SOURCE_DIR}/src
              ${PROJECT_SOURCE_DIR}/src/${proto}
      DEPENDS ${PROJECT_SOURCE_DIR}/src/${proto} protobuf::protoc
      COMMENT "protoc ${proto}"
      VERBATIM)
    target_sources(${target} PRIVATE ${outputs})
  endforeach()
  target_include_directories(${target} PUBLIC ${out_dir})
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf)
endfunction()
