# cohort_library(NAME EXPORT_NAME SOURCES...): one library target per folder, named cohort_NAME
# with alias cohort::EXPORT_NAME, versioned, and registered for installation (with the folder's
# include/ directory, if it has one). Every folder's CMakeLists.txt uses this, so adding a folder
# never means editing the install rules.
function(cohort_library name export_name)
  add_library(${name} ${ARGN})
  add_library(cohort::${export_name} ALIAS ${name})
  set_target_properties(${name} PROPERTIES EXPORT_NAME ${export_name} OUTPUT_NAME ${name}
                        VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/include)
    target_include_directories(${name} PUBLIC
      $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    set_property(GLOBAL APPEND PROPERTY COHORT_INCLUDE_DIRS ${CMAKE_CURRENT_SOURCE_DIR}/include)
  endif()
  set_property(GLOBAL APPEND PROPERTY COHORT_INSTALL_TARGETS ${name})
endfunction()

# cohort_tool(NAME SOURCES...): an installed executable in build/bin.
function(cohort_tool name)
  add_executable(${name} ${ARGN})
  set_property(GLOBAL APPEND PROPERTY COHORT_INSTALL_TOOLS ${name})
endfunction()
