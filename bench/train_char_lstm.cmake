# train_char_lstm: examples/char_lstm's network trained by fluxion and by libtorch, side by side.
# Included from bench/CMakeLists.txt.
add_executable(train_char_lstm ${CMAKE_CURRENT_LIST_DIR}/train_char_lstm.cpp)
target_link_libraries(train_char_lstm PRIVATE fluxion)
if(Torch_FOUND)
  target_compile_definitions(train_char_lstm PRIVATE FLUXION_BENCH_TORCH)
  target_link_libraries(train_char_lstm PRIVATE ${TORCH_LIBRARIES})
endif()
