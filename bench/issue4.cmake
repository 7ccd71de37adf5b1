# Issue 4 benchmarks: LSTM overhead, matmul vs OpenBLAS, ADBench GMM, LSTM, BA and hand tracking.
# Included from bench/CMakeLists.txt. Each prints fluxion beside its peers as name=value lines.
foreach(b lstm_overhead matmul adbench_gmm adbench_lstm adbench_ba adbench_hand)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${b}.cpp)
    add_executable(${b} ${CMAKE_CURRENT_LIST_DIR}/${b}.cpp)
    target_link_libraries(${b} PRIVATE fluxion)
    if(Torch_FOUND)
      target_compile_definitions(${b} PRIVATE FLUXION_HAVE_TORCH)
      target_link_libraries(${b} PRIVATE ${TORCH_LIBRARIES})
    endif()
  endif()
endforeach()
# matmul calls cblas_sgemm and dnnl_sgemm directly, beside fx::matmul.
if(TARGET matmul)
  target_include_directories(matmul PRIVATE ${CBLAS_INCLUDE_DIR} ${DNNL_INCLUDE_DIR})
  target_link_libraries(matmul PRIVATE ${BLAS_LIBRARIES} ${DNNL_LIBRARY})
endif()
# The ADBench benchmarks check their implementations against each other (and BA and hand
# against finite differences) before timing, and exit 1 on a disagreement; run those checks
# (with one short timing each) with the tests.
if(TARGET adbench_gmm AND FLUXION_TESTS)
  add_test(NAME adbench_gmm_agreement
           COMMAND adbench_gmm --sets 1k --max-d 10 --max-k 10 --min-time 0 --samples 1
                   --budget 0)
endif()
if(TARGET adbench_lstm AND FLUXION_TESTS)
  add_test(NAME adbench_lstm_agreement
           COMMAND adbench_lstm --only l2_c1024 --min-time 0 --samples 1 --budget 0)
endif()
if(TARGET adbench_ba AND FLUXION_TESTS)
  add_test(NAME adbench_ba_agreement
           COMMAND adbench_ba --sets ba1 --min-time 0 --samples 1 --budget 0)
endif()
if(TARGET adbench_hand AND FLUXION_TESTS)
  add_test(NAME adbench_hand_agreement
           COMMAND adbench_hand --sets simple/hand1,complicated/hand1 --min-time 0 --samples 1
                   --budget 0)
endif()
