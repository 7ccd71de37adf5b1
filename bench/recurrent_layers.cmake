# recurrent_layers: LSTM, GRU and MultiHeadAttention forward + backward beside libtorch.
# Included from bench/CMakeLists.txt.
add_executable(recurrent_layers ${CMAKE_CURRENT_LIST_DIR}/recurrent_layers.cpp)
target_link_libraries(recurrent_layers PRIVATE fluxion)
if(Torch_FOUND)
  target_compile_definitions(recurrent_layers PRIVATE FLUXION_BENCH_TORCH)
  target_link_libraries(recurrent_layers PRIVATE ${TORCH_LIBRARIES})
endif()
