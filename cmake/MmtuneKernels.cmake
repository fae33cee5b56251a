# The AOT kernels mmtune ships: reads a committed tuning database (tuned/<target>.json) at configure
# time, builds one Halide library per kernel and generates the C++ dispatch table that lists them.
# The build never tunes (STYLE.md item 7); the table is compiled, nothing is read at run time.
include_guard(GLOBAL)

# The shipped databases of the build machine's architecture, best first (the order in which the
# runtime tries them on the CPU it runs on: runtime/src/dispatch.cc): every x86-64 level tuned/
# holds, whatever the build machine's own CPU (a level its CPU lacks is compiled, not run), GPU
# targets' databases excepted (autotune/CMakeLists.txt builds them: MMTUNE_CROSS_TARGETS); none
# for cross builds or other architectures.
function(mmtune_shipped_kernel_targets out_var)
  set(targets "")
  if(NOT CMAKE_CROSSCOMPILING AND CMAKE_HOST_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    # Every tuned/x86-64-linux-*.json, AVX-512 levels first, then AVX2, then the rest (SSE4.1).
    file(GLOB dbs RELATIVE "${PROJECT_SOURCE_DIR}/tuned" "${PROJECT_SOURCE_DIR}/tuned/x86-64-linux-*.json")
    list(SORT dbs)
    foreach(rank IN ITEMS avx512 avx2 other)
      foreach(db IN LISTS dbs)
        string(REGEX REPLACE "\\.json$" "" t "${db}")
        # A GPU target's database (x86-64-linux-cuda-...) is a cross target's: MMTUNE_CROSS_TARGETS.
        if(t MATCHES "-(cuda|opencl|metal|vulkan|d3d12compute|webgpu)")
          continue()
        endif()
        if((rank STREQUAL "avx512" AND t MATCHES "avx512")
           OR (rank STREQUAL "avx2" AND t MATCHES "avx2" AND NOT t MATCHES "avx512")
           OR (rank STREQUAL "other" AND NOT t MATCHES "avx2|avx512"))
          list(APPEND targets "${t}")
        endif()
      endforeach()
    endforeach()
  endif()
  if(NOT targets)
    set(targets none)
  endif()
  set(${out_var} "${targets}" PARENT_SCOPE)
endfunction()

# Which kernels get a prepacked twin (a regular expression over "<op> <identity params>"): the
# float32 Gemm, 8-bit integer QLinearMatMul, QGemm and QuantMatmulDequant kernels by default; other
# identities' prepack_b calls run their plain kernels (exact, packing B per call). "^$" builds none.
# An identity whose prepacked kernels a database holds itself (tuned with B prepacked: params
# prepacked_b=true) gets no twins there: its own prepacked kernels serve its prepack_b calls.
# QuantMatmulDequant's are built for x86 CPUs only (on ARM its sdot layout sums x_q itself, with no
# column sums to fold into the bias: generators/quant_matmul_dequant_generator.cc; HVX not yet).
set(MMTUNE_PREPACKED "^(Gemm A\\.type=float32 |QLinearMatMul a\\.type=u?int8 |QGemm |QuantMatmulDequant )" CACHE STRING
    "Kernels (regex over '<op> <identity params>') that get a prepacked-B twin")

mmtune_shipped_kernel_targets(_mmtune_default_targets)
set(MMTUNE_TARGETS "${_mmtune_default_targets}" CACHE STRING
    "Halide targets of the kernels mmtune::runtime carries, best first: the databases \
tuned/<target>.json, or none (default: every shipped level of this architecture; the CPU a program \
runs on picks the best it supports)")
foreach(_mmtune_old IN ITEMS MMTUNE_TARGET MMTUNE_EXTRA_TARGETS)
  if(DEFINED CACHE{${_mmtune_old}})
    message(WARNING "${_mmtune_old} is no longer read: one runtime library carries every level of "
            "MMTUNE_TARGETS (now '${MMTUNE_TARGETS}')")
    unset(${_mmtune_old} CACHE)
  endif()
endforeach()

# Reads member `path...` of `json` into `out`; a fatal error naming `what` when it is missing.
function(_mmtune_json_get out json what)
  string(JSON value ERROR_VARIABLE err GET "${json}" ${ARGN})
  if(err)
    message(FATAL_ERROR "mmtune_add_kernels: ${what}: ${err}")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# A JSON scalar as a generator-parameter value: booleans as true/false, numbers and strings as is.
function(_mmtune_json_scalar out json what)
  string(JSON type TYPE "${json}" ${ARGN})
  string(JSON value GET "${json}" ${ARGN})
  if(type STREQUAL "BOOLEAN")
    if(value)
      set(value true)
    else()
      set(value false)
    endif()
  elseif(NOT type MATCHES "^(NUMBER|STRING)$")
    message(FATAL_ERROR "mmtune_add_kernels: ${what} is a JSON ${type}; expected a string, number or boolean")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# The members of object `path...` of `json` as "key=value" items, sorted; `skip` lists keys to leave
# out.
function(_mmtune_json_params out json what skip)
  string(JSON type ERROR_VARIABLE err TYPE "${json}" ${ARGN})
  if(err OR NOT type STREQUAL "OBJECT")
    message(FATAL_ERROR "mmtune_add_kernels: ${what} must be a JSON object")
  endif()
  string(JSON n LENGTH "${json}" ${ARGN})
  set(items "")
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON key MEMBER "${json}" ${ARGN} ${i})
      if(key IN_LIST skip)
        continue()
      endif()
      _mmtune_json_scalar(value "${json}" "${what}.${key}" ${ARGN} "${key}")
      if(value MATCHES "[ =;\"\\]" OR value STREQUAL "")
        message(FATAL_ERROR "mmtune_add_kernels: ${what}.${key}='${value}' must be non-empty, "
                "without spaces, '=', ';', quotes or backslashes")
      endif()
      list(APPEND items "${key}=${value}")
    endforeach()
  endif()
  list(SORT items)
  set(${out} "${items}" PARENT_SCOPE)
endfunction()

# mmtune_add_kernels(<name> DATABASES <file.json>... FROM <generator executable> OUT_SOURCES <var>
#                    [OUT_TARGETS <var>] [OUT_MANIFEST <var>])
#
# For each kernel of each database, add_halide_library(<kernel name> ...) with the kernel's identity
# params and schedule (its "template" included) as generator params, compiled for its database's
# target plus user_context (each call carries its own error capture) and C++ name mangling (the
# function is mmtune::kernels::<kernel name>); one Halide runtime shared by all; and the generated
# dispatch tables <name>_table.cc, one per database in the order given (best first: the runtime
# runs the first level the CPU supports that has a kernel for the call). <var> receives the
# tables, every kernel's object and the runtime's object, for the library that carries them (one
# archive to install; the caller adds the current binary directory, where the kernels' headers
# are, to its include path). A table declares, per kernel: name, operator, generator, identity
# params, schedule, shape bucket and the function, checked at compile time against the operator's
# signature type mmtune::runtime::<Op>KernelFn (runtime/src/kernel_table.h). A database whose
# target is "none" has no kernels; its table is empty. The databases' targets must share one
# architecture (one runtime serves them) and be distinct; OUT_TARGETS receives them in order.
# OUT_MANIFEST receives a JSON array of every kernel the library carries, each its database entry
# (name, op, generator, params, schedule, bucket, provenance) plus its target; a prepacked twin is
# its kernel's entry renamed, with prepacked_b=true and prepacked_twin_of naming the kernel.
function(mmtune_add_kernels name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "FROM;OUT_SOURCES;OUT_TARGETS;OUT_MANIFEST" "DATABASES")
  if(NOT ARG_DATABASES OR NOT ARG_FROM OR NOT ARG_OUT_SOURCES)
    message(FATAL_ERROR "mmtune_add_kernels(${name}): DATABASES, FROM and OUT_SOURCES are required")
  endif()

  # Every database read and checked first; the runtime's architecture from their targets.
  set(files "")
  set(targets "")
  set(arch "")
  foreach(database IN LISTS ARG_DATABASES)
    cmake_path(ABSOLUTE_PATH database BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${database}")
      message(FATAL_ERROR "mmtune_add_kernels(${name}): no database ${database}")
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${database}")
    file(READ "${database}" json)
    cmake_path(GET database FILENAME db_name)
    string(JSON err_check ERROR_VARIABLE err TYPE "${json}")
    if(err)
      message(FATAL_ERROR "mmtune_add_kernels: ${database} is not valid JSON: ${err}")
    endif()
    _mmtune_json_get(target "${json}" "${db_name}" target)
    if(target IN_LIST targets)
      message(FATAL_ERROR "mmtune_add_kernels: ${db_name}: a second database for target ${target}")
    endif()
    if(NOT target STREQUAL "none")
      string(REGEX MATCH "^[a-z0-9_]+-[0-9]+-[a-z]+" db_arch "${target}")
      if(arch AND NOT db_arch STREQUAL arch)
        message(FATAL_ERROR "mmtune_add_kernels: ${db_name}: target ${target} is not of ${arch}, the "
                "architecture of the other databases (one runtime library holds one architecture)")
      endif()
      set(arch "${db_arch}")
    endif()
    list(APPEND files "${database}")
    list(APPEND targets "${target}")
  endforeach()

  # One runtime for every kernel (the Halide runtime is per process: one thread pool, one error
  # handler), compiled for the architecture's baseline: the library promises to run the reference
  # on a CPU that lacks the kernels' features, so the runtime's own code must not need them (Halide
  # builds a runtime for the common features of its targets: the baseline target makes them none).
  # For a kernel-less build, the runtime of the host so that the API still links.
  set(runtime ${name}.runtime)
  if(arch)
    add_halide_runtime(${runtime} TARGETS "${arch}")
  else()
    add_halide_runtime(${runtime} TARGETS host)
  endif()

  set(includes "")
  set(checks "")
  set(libraries "")
  set(names "")
  set(arrays "")
  set(tables "")
  set(summary "")
  set(manifest "[]")
  set(n_manifest 0)
  set(db_index 0)
  foreach(database target IN ZIP_LISTS files targets)
    file(READ "${database}" json)
    cmake_path(GET database FILENAME db_name)
    string(JSON count ERROR_VARIABLE err LENGTH "${json}" kernels)
    if(err)
      message(FATAL_ERROR "mmtune_add_kernels: ${db_name}: no 'kernels' array: ${err}")
    endif()
    set(entries "")
    set(n_entries 0)
    set(n_kernels 0)
    # The identities whose prepacked kernels the database tunes itself (params prepacked_b=true,
    # `mmtune autotune --op ...:prepacked_b=true`): their plain kernels get no twin.
    set(tuned_prepacked "")
    if(count GREATER 0)
      math(EXPR last "${count} - 1")
      foreach(i RANGE ${last})
        string(JSON pre ERROR_VARIABLE err GET "${json}" kernels ${i} params prepacked_b)
        if(NOT err AND pre STREQUAL "true")
          string(JSON pre_op GET "${json}" kernels ${i} op)
          _mmtune_json_params(pre_identity "${json}" "${db_name}: kernels[${i}]: params" "prepacked_b"
                              kernels ${i} params)
          list(JOIN pre_identity " " pre_text)
          list(APPEND tuned_prepacked "${pre_op} ${pre_text}")
        endif()
      endforeach()
    endif()
    if(count GREATER 0)
      math(EXPR last "${count} - 1")
      foreach(i RANGE ${last})
        set(where "${db_name}: kernels[${i}]")
        _mmtune_json_get(kernel "${json}" "${where}" kernels ${i} name)
        set(where "${db_name}: kernel ${kernel}")
        if(NOT kernel MATCHES "^[a-z][a-z0-9_]*__[a-z0-9_]+$")
          message(FATAL_ERROR "mmtune_add_kernels: ${where}: the name does not follow docs/naming.md "
                  "(<op>_<dtypes>[_<mode>]__<isa>_<tile>, lower case)")
        endif()
        if(kernel IN_LIST names)
          message(FATAL_ERROR "mmtune_add_kernels: ${where} is listed twice")
        endif()
        list(APPEND names "${kernel}")
        _mmtune_json_get(op "${json}" "${where}" kernels ${i} op)
        if(NOT op MATCHES "^[A-Z][A-Za-z0-9]*$")
          message(FATAL_ERROR "mmtune_add_kernels: ${where}: op '${op}' is not an ONNX operator name")
        endif()
        _mmtune_json_get(generator "${json}" "${where}" kernels ${i} generator)
        _mmtune_json_params(identity "${json}" "${where}: params" "" kernels ${i} params)
        _mmtune_json_params(schedule "${json}" "${where}: schedule" "" kernels ${i} schedule)
        # The fma float contract needs a fused multiply-add (schedules/target_info.cc, why_no_fma).
        if("contract=fma" IN_LIST identity AND target MATCHES "^x86" AND NOT target MATCHES "-(fma|avx512[a-z_]*)(-|$)")
          message(FATAL_ERROR "mmtune_add_kernels: ${where}: contract=fma needs a fused multiply-add, which "
                  "target ${target} lacks (an x86 target needs the fma feature, e.g. x86-64-linux-avx2-fma)")
        endif()

        # The bucket: "any", an object of optional m_min, m_max, n_min, n_max, k_min, k_max,
        # threads_min, threads_max (the pool's thread count), or an array of such objects (one
        # kernel serving several buckets: one table entry each).
        set(bucket_paths "")
        string(JSON bucket_type ERROR_VARIABLE err TYPE "${json}" kernels ${i} bucket)
        if(err)
          message(FATAL_ERROR "mmtune_add_kernels: ${where}: no 'bucket' (\"any\" or {\"m_min\": ...})")
        elseif(bucket_type STREQUAL "STRING")
          string(JSON any GET "${json}" kernels ${i} bucket)
          if(NOT any STREQUAL "any")
            message(FATAL_ERROR "mmtune_add_kernels: ${where}: bucket '${any}' is not \"any\" or an object")
          endif()
          set(bucket_paths "any")
        elseif(bucket_type STREQUAL "OBJECT")
          set(bucket_paths "-")
        elseif(bucket_type STREQUAL "ARRAY")
          string(JSON nb LENGTH "${json}" kernels ${i} bucket)
          if(nb EQUAL 0)
            message(FATAL_ERROR "mmtune_add_kernels: ${where}: bucket is an empty array")
          endif()
          math(EXPR nb_last "${nb} - 1")
          foreach(b RANGE ${nb_last})
            string(JSON item_type TYPE "${json}" kernels ${i} bucket ${b})
            if(NOT item_type STREQUAL "OBJECT")
              message(FATAL_ERROR "mmtune_add_kernels: ${where}: bucket[${b}] is a JSON ${item_type}, not an object")
            endif()
            list(APPEND bucket_paths "${b}")
          endforeach()
        else()
          message(FATAL_ERROR "mmtune_add_kernels: ${where}: bucket is a JSON ${bucket_type}")
        endif()
        set(buckets "")
        foreach(path IN LISTS bucket_paths)
          set(bounds "")
          if(path STREQUAL "-")
            _mmtune_json_params(bounds "${json}" "${where}: bucket" "" kernels ${i} bucket)
          elseif(NOT path STREQUAL "any")
            _mmtune_json_params(bounds "${json}" "${where}: bucket[${path}]" "" kernels ${i} bucket ${path})
          endif()
          set(bucket "")
          foreach(dim IN ITEMS m n k threads)
            set(lo 0)
            set(hi -1)  # unbounded
            foreach(item IN LISTS bounds)
              if(item MATCHES "^${dim}_min=([0-9]+)$")
                set(lo "${CMAKE_MATCH_1}")
              elseif(item MATCHES "^${dim}_max=([0-9]+)$")
                set(hi "${CMAKE_MATCH_1}")
              elseif(NOT item MATCHES "^(m|n|k|threads)_(min|max)=[0-9]+$")
                message(FATAL_ERROR "mmtune_add_kernels: ${where}: bucket entry '${item}' is not "
                        "m_min, m_max, n_min, n_max, k_min, k_max, threads_min or threads_max "
                        "with a non-negative integer")
              endif()
            endforeach()
            string(APPEND bucket "${lo}, ${hi}, ")
          endforeach()
          list(APPEND buckets "${bucket}")
        endforeach()

        # The generator params: identity and schedule (the schedule's keys are the generator's knobs).
        add_halide_library(${kernel} FROM ${ARG_FROM}
                           GENERATOR ${generator}
                           FUNCTION_NAME ${kernel}
                           NAMESPACE mmtune::kernels
                           USE_RUNTIME ${runtime}
                           TARGETS "${target}-user_context-c_plus_plus_name_mangling"
                           PARAMS ${identity} ${schedule})
        list(APPEND libraries ${kernel})
        string(APPEND includes "#include \"${kernel}.h\"\n")
        string(APPEND checks
               "static_assert(std::is_same_v<decltype(&mmtune::kernels::${kernel}), ${op}KernelFn>,\n"
               "              \"${kernel}: its signature is not ${op}KernelFn\");\n")
        list(JOIN identity " " identity_text)
        list(JOIN schedule " " schedule_text)
        math(EXPR n_kernels "${n_kernels} + 1")
        foreach(bucket IN LISTS buckets)
          math(EXPR n_entries "${n_entries} + 1")
          string(APPEND entries
                 "    {\"${kernel}\", \"${op}\", \"${generator}\",\n"
                 "     \"${identity_text}\",\n"
                 "     \"${schedule_text}\",\n"
                 "     {${bucket}}, reinterpret_cast<KernelFn>(&mmtune::kernels::${kernel})},\n")
        endforeach()

        # Its prepacked twin (mmtune::runtime::prepack_b): the same schedule reading a B packed
        # once by the host; entries of the identity plus prepacked_b=true, named <op>..._prepacked__.
        set(twin "")
        if("${op} ${identity_text}" MATCHES "${MMTUNE_PREPACKED}" AND NOT identity_text MATCHES "_format="
           AND NOT identity_text MATCHES "trans_b=true|transpose_weight=true"
           AND NOT (op STREQUAL "QuantMatmulDequant" AND NOT target MATCHES "^x86-")
           AND NOT "prepacked_b=true" IN_LIST identity
           AND NOT "${op} ${identity_text}" IN_LIST tuned_prepacked)
          string(REPLACE "__" "_prepacked__" twin "${kernel}")
          add_halide_library(${twin} FROM ${ARG_FROM}
                             GENERATOR ${generator}
                             FUNCTION_NAME ${twin}
                             NAMESPACE mmtune::kernels
                             USE_RUNTIME ${runtime}
                             TARGETS "${target}-user_context-c_plus_plus_name_mangling"
                             PARAMS ${identity} prepacked_b=true ${schedule})
          list(APPEND libraries ${twin})
          string(APPEND includes "#include \"${twin}.h\"\n")
          string(APPEND checks
                 "static_assert(std::is_same_v<decltype(&mmtune::kernels::${twin}), ${op}KernelFn>,\n"
                 "              \"${twin}: its signature is not ${op}KernelFn\");\n")
          math(EXPR n_kernels "${n_kernels} + 1")
          foreach(bucket IN LISTS buckets)
            math(EXPR n_entries "${n_entries} + 1")
            string(APPEND entries
                   "    {\"${twin}\", \"${op}\", \"${generator}\",\n"
                   "     \"${identity_text} prepacked_b=true\",\n"
                   "     \"${schedule_text}\",\n"
                   "     {${bucket}}, reinterpret_cast<KernelFn>(&mmtune::kernels::${twin})},\n")
          endforeach()
        endif()

        # The manifest's entries (string(JSON SET) at the array's length appends).
        if(ARG_OUT_MANIFEST)
          string(JSON entry GET "${json}" kernels ${i})
          string(JSON entry SET "${entry}" target "\"${target}\"")
          string(JSON manifest SET "${manifest}" ${n_manifest} "${entry}")
          math(EXPR n_manifest "${n_manifest} + 1")
          if(twin)
            string(JSON entry SET "${entry}" name "\"${twin}\"")
            string(JSON entry SET "${entry}" params prepacked_b "\"true\"")
            string(JSON entry SET "${entry}" prepacked_twin_of "\"${kernel}\"")
            string(JSON manifest SET "${manifest}" ${n_manifest} "${entry}")
            math(EXPR n_manifest "${n_manifest} + 1")
          endif()
        endif()
      endforeach()
    endif()
    file(RELATIVE_PATH db_rel "${PROJECT_SOURCE_DIR}" "${database}")
    if(n_entries GREATER 0)
      string(APPEND arrays "const KernelEntry entries_${db_index}[] = {\n${entries}};\n")
      string(APPEND tables "    {\"${target}\", \"${db_rel}\", entries_${db_index}, ${n_entries}},\n")
    else()
      string(APPEND tables "    {\"${target}\", \"${db_rel}\", nullptr, 0},\n")
    endif()
    if(summary)
      string(APPEND summary ",")
    endif()
    string(APPEND summary " ${n_kernels} for ${target}")
    math(EXPR db_index "${db_index} + 1")
  endforeach()

  set(table "${CMAKE_CURRENT_BINARY_DIR}/${name}_table.cc")
  list(JOIN targets ", " target_list)
  file(CONFIGURE OUTPUT "${table}" @ONLY CONTENT [[
// The dispatch tables of the linked kernels, best level first (@target_list@). Generated by
// cmake/MmtuneKernels.cmake from the tuning databases at configure time: do not edit.
#include <type_traits>

#include "runtime/src/kernel_table.h"
@includes@
namespace mmtune::runtime {

@checks@
namespace {

@arrays@
}  // namespace

const LinkedTables& linked_tables() {
  static const KernelTable tables[] = {
@tables@  };
  static const LinkedTables linked{tables, sizeof(tables) / sizeof(tables[0])};
  return linked;
}

}  // namespace mmtune::runtime
]])

  # The objects add_halide_library and add_halide_runtime write (native targets: one object each).
  set(sources "${table}")
  foreach(kernel IN LISTS libraries ITEMS ${runtime})
    get_target_property(imported ${kernel} IMPORTED)
    if(imported)
      message(FATAL_ERROR "mmtune_add_kernels: ${kernel} is built for a cross target; the runtime builds host kernels")
    endif()
    list(APPEND sources "${CMAKE_CURRENT_BINARY_DIR}/${kernel}${CMAKE_CXX_OUTPUT_EXTENSION}")
  endforeach()
  set(${ARG_OUT_SOURCES} "${sources}" PARENT_SCOPE)
  if(ARG_OUT_TARGETS)
    set(${ARG_OUT_TARGETS} "${targets}" PARENT_SCOPE)
  endif()
  if(ARG_OUT_MANIFEST)
    set(${ARG_OUT_MANIFEST} "${manifest}" PARENT_SCOPE)
  endif()
  message(STATUS "mmtune: ${name}: AOT kernels:${summary}")
endfunction()
