# train_mlp: one epoch of the Fashion-MNIST MLP, fluxion beside libtorch when it is found.
# Included from bench/CMakeLists.txt.
add_executable(train_mlp ${CMAKE_CURRENT_LIST_DIR}/train_mlp.cpp)
target_link_libraries(train_mlp PRIVATE fluxion)
if(Torch_FOUND)
  target_compile_definitions(train_mlp PRIVATE FLUXION_BENCH_TORCH)
  target_link_libraries(train_mlp PRIVATE ${TORCH_LIBRARIES})
endif()
