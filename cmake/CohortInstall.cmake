# `cmake --install` lays out lib/, include/cohort/ and lib/cmake/cohort/ so that another project
# can find_package(cohort) and link cohort::cohort.
include(CMakePackageConfigHelpers)

get_property(_cohort_targets GLOBAL PROPERTY COHORT_INSTALL_TARGETS)
get_property(_cohort_tools GLOBAL PROPERTY COHORT_INSTALL_TOOLS)
get_property(_cohort_includes GLOBAL PROPERTY COHORT_INCLUDE_DIRS)
install(TARGETS ${_cohort_targets} ${_cohort_tools} EXPORT cohortTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(_dir ${_cohort_includes})
  install(DIRECTORY ${_dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()

set(_cfgdir ${CMAKE_INSTALL_LIBDIR}/cmake/cohort)
install(EXPORT cohortTargets NAMESPACE cohort:: DESTINATION ${_cfgdir})
configure_package_config_file(cmake/cohortConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/cohortConfig.cmake INSTALL_DESTINATION ${_cfgdir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/cohortConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cohortConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/cohortConfigVersion.cmake DESTINATION ${_cfgdir})
