# migsched_grpc_proto(TARGET PROTO_ROOT PROTO...): a static library TARGET of the
# C++ messages and gRPC services generated from each PROTO (a path relative to
# PROTO_ROOT) with Debian's protoc and grpc_cpp_plugin. Generated files land in
# <build>/generated/<PROTO's folder>/ and are included as
# "<PROTO's folder>/<name>.pb.h" / ".grpc.pb.h". Generated code is compiled
# without our warning flags (it is not ours to fix) and its headers are SYSTEM.
pkg_check_modules(GRPCPP REQUIRED IMPORTED_TARGET grpc++ protobuf)
find_program(MIGSCHED_PROTOC protoc REQUIRED)
find_program(MIGSCHED_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)

function(migsched_grpc_proto target proto_root)
  set(_out ${CMAKE_BINARY_DIR}/generated)
  set(_srcs)
  foreach(_proto ${ARGN})
    get_filename_component(_dir ${_proto} DIRECTORY)
    get_filename_component(_name ${_proto} NAME_WE)
    set(_gen ${_out}/${_dir}/${_name}.pb.cc ${_out}/${_dir}/${_name}.pb.h
             ${_out}/${_dir}/${_name}.grpc.pb.cc ${_out}/${_dir}/${_name}.grpc.pb.h)
    add_custom_command(
      OUTPUT ${_gen}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_out}
      COMMAND ${MIGSCHED_PROTOC} --proto_path=${proto_root} --cpp_out=${_out}
              --grpc_out=${_out} --plugin=protoc-gen-grpc=${MIGSCHED_GRPC_CPP_PLUGIN}
              ${proto_root}/${_proto}
      DEPENDS ${proto_root}/${_proto}
      COMMENT "Generating C++ and gRPC code from ${_proto}"
      VERBATIM)
    list(APPEND _srcs ${_out}/${_dir}/${_name}.pb.cc ${_out}/${_dir}/${_name}.grpc.pb.cc)
  endforeach()
  add_library(${target} STATIC ${_srcs})
  target_compile_options(${target} PRIVATE -w)
  target_include_directories(${target} SYSTEM PUBLIC ${_out})
  target_link_libraries(${target} PUBLIC PkgConfig::GRPCPP)
endfunction()
