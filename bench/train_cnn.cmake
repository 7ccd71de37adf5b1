# train_cnn: examples/fashion_mnist_cnn's network trained by fluxion and by libtorch, side by side.
# Included from bench/CMakeLists.txt.
add_executable(train_cnn ${CMAKE_CURRENT_LIST_DIR}/train_cnn.cpp)
target_link_libraries(train_cnn PRIVATE fluxion)
if(Torch_FOUND)
  target_compile_definitions(train_cnn PRIVATE FLUXION_BENCH_TORCH)
  target_link_libraries(train_cnn PRIVATE ${TORCH_LIBRARIES})
endif()
